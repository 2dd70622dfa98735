import { readFileSync } from "node:fs";

/** Linux's clock tick for /proc times; 100 on every kernel this bench runs on (getconf CLK_TCK). */
const ticksPerSecond = 100;

/**
 * CPU time (user + system, ms) a process has used so far, from
 * /proc/PID/stat. On a shared, noisy machine a proxy's latency and
 * throughput move with its neighbours' load, but the CPU it spends per
 * request hardly does: it is the per-core comparison that survives the noise.
 */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis are fixed.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const userTicks = Number(fields[11]);
  const systemTicks = Number(fields[12]);
  return ((userTicks + systemTicks) * 1000) / ticksPerSecond;
}
