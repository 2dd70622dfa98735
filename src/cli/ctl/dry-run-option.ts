import type { Command } from "commander";
import type { DryRunAnswer } from "../../protocol/index.js";
export { DryRunAnswered } from "../../client/index.js";

/**
 * The ctl commands that only read (a GET and nothing else): they get no
 * --dry-run. Every other command under ctl sends a change and takes one, so a
 * change command added later has the option without anyone remembering it.
 */
const readingCommands: ReadonlySet<string> = new Set([
  "models",
  "model show",
  "model plan",
  "model presets",
  "model canaries",
  "model updates",
  "model history",
  "audit",
  "keys",
  "key usage",
  "usage",
  "nodes",
  "replicas",
  "logs",
  "events",
  "tokens",
  "presets",
  "export",
  "backup",
]);

export const dryRunHelp = "show what the change would do (replicas started where, stopped, preempted; engine arguments; KV cache per card) and change nothing";

function leaves(command: Command, prefix: string): { path: string; command: Command }[] {
  return command.commands.flatMap((child) => {
    const path = prefix ? `${prefix} ${child.name()}` : child.name();
    return child.commands.length === 0 ? [{ path, command: child }] : leaves(child, path);
  });
}

/** Gives every change command under `ctl` its --dry-run; answers the paths that got one. */
export function addDryRunOptions(ctl: Command): string[] {
  const changed = leaves(ctl, "").filter((leaf) => !readingCommands.has(leaf.path));
  for (const leaf of changed) leaf.command.option("--dry-run", dryRunHelp);
  return changed.map((leaf) => leaf.path);
}

const describeValue = (value: unknown) => (typeof value === "object" && value !== null ? JSON.stringify(value) : String(value));

/** What `outcome` shows in force, in a few lines: the model's state and scaling, or the answer's own fields. */
function outcomeLines(outcome: unknown): string[] {
  if (typeof outcome !== "object" || outcome === null) return outcome === undefined ? [] : [`  ${describeValue(outcome)}`];
  const record = outcome as Record<string, unknown>;
  const scaling = record.scaling as { min?: number; max?: number } | undefined;
  if (typeof record.name === "string" && scaling) {
    const profiles = Array.isArray(record.profiles) ? (record.profiles as { name?: string; gpus?: number }[]).map((profile) => `${profile.name} (${profile.gpus ?? 0} cards)`).join(", ") : "";
    return [`  ${record.name}: ${String(record.class ?? "")}, scaling ${scaling.min ?? 0}..${scaling.max ?? 0}${profiles ? `, profiles ${profiles}` : ""}`];
  }
  return Object.entries(record)
    .filter(([, value]) => value !== null && value !== undefined && typeof value !== "object")
    .slice(0, 8)
    .map(([key, value]) => `  ${key}: ${describeValue(value)}`);
}

/** The dry run for the person at the terminal: that nothing changed, each change, then what would be in force. */
export function describeDryRun(answer: DryRunAnswer): string {
  const lines = ["Dry run: nothing was changed."];
  if (answer.changes.length === 0) lines.push("It would change nothing that runs.");
  for (const change of answer.changes) {
    lines.push(`  ${change.summary}`);
    if (change.engine_args && change.engine_args.length > 0) lines.push(`    engine arguments: ${change.engine_args.join(" ")}`);
  }
  const after = outcomeLines(answer.outcome);
  if (after.length > 0) lines.push("In force after the change:", ...after);
  return lines.join("\n");
}
