import { readdirSync, readFileSync } from "node:fs";

/** Linux's clock tick for /proc times; 100 on every kernel this bench runs on (getconf CLK_TCK). */
const ticksPerSecond = 100;

/** CPU time a process (or a tree of them) has used so far, in ms: in its own code, and in the kernel on its behalf. */
export interface CpuMs {
  readonly user: number;
  readonly system: number;
}

/**
 * CPU time a process has used so far, from /proc/PID/stat. On a shared,
 * noisy machine a proxy's latency and throughput move with its neighbours'
 * load, but the CPU it spends per request hardly does: it is the per-core
 * comparison that survives the noise. User and kernel time are kept apart:
 * the kernel's share is mostly the sockets' reads and writes, which every
 * proxy pays alike, and the user share is what a proxy's own code costs.
 */
export function processCpuMs(pid: number): CpuMs {
  const fields = statFields(pid);
  return { user: (Number(fields[11]) * 1000) / ticksPerSecond, system: (Number(fields[12]) * 1000) / ticksPerSecond };
}

/**
 * The same for a process and its children: nginx's master and its workers,
 * or a gateway's primary and its workers, are one proxy, and a comparison per
 * core must count all the processes it runs on.
 */
export function processTreeCpuMs(pid: number): CpuMs {
  let { user, system } = processCpuMs(pid);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let fields: string[];
    try {
      fields = statFields(Number(entry));
    } catch {
      // Gone between the listing and the read.
      continue;
    }
    // Field 4 (the parent's pid) is the second after the name.
    if (Number(fields[1]) !== pid) continue;
    const child = processCpuMs(Number(entry));
    user += child.user;
    system += child.system;
  }
  return { user, system };
}

/** /proc/PID/stat's fields after the command name, which may hold spaces: the fields after its closing parenthesis are fixed. */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}
