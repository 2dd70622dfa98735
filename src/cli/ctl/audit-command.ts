import { admin } from "../../client/index.js";
import type { Command } from "commander";
import type { AuditEvent } from "../../store/index.js";
import { print, printJson, renderTable } from "../output.js";
import { wholeNumber } from "../parse-option.js";
import { apiClient, ctlOptions } from "./context.js";

/** What an event changed, in a line: the top-level keys that differ, before → after. */
export function describeChange(event: Pick<AuditEvent, "before" | "after">): string {
  if (event.before === null) {
    const preset = (event.after as { preset?: unknown } | null)?.preset;
    return typeof preset === "string" ? `added from preset ${preset}` : "added";
  }
  if (event.after === null) return "removed";
  const before = event.before as Record<string, unknown>;
  const after = event.after as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((key) => JSON.stringify(before[key]) !== JSON.stringify(after[key]));
  const show = (value: unknown) => (value === undefined ? "(unset)" : JSON.stringify(value));
  return keys.map((key) => `${key}: ${show(before[key])} → ${show(after[key])}`).join("; ");
}

export function registerAuditCommand(ctl: Command): void {
  ctl
    .command("audit")
    .description("who changed what in the catalog, newest first")
    .option("--model <name>", "only this model's changes")
    .option("--limit <n>", "how many events (default 100)", wholeNumber(1))
    .option("--json", "print the API's JSON ({events: [...]}) with full before/after entries")
    .action(async (options: { model?: string; limit?: number }, command: Command) => {
      const query = new URLSearchParams();
      if (options.model) query.set("model", options.model);
      if (options.limit) query.set("limit", String(options.limit));
      const result = await apiClient(ctlOptions(command)).send(admin.audit(Object.fromEntries(query)));
      if (ctlOptions(command).json) return printJson(result);
      if (result.events.length === 0) return print(options.model ? `No changes recorded for ${options.model}.` : "No changes recorded yet.");
      print(
        renderTable(
          ["TIME", "ACTOR", "ACTION", "MODEL", "CHANGE"],
          result.events.map((event) => [
            event.at.replace("T", " ").replace(/\.\d+Z$/, "Z"),
            event.actor_user ? `${event.actor} (${event.actor_user})` : event.actor,
            event.action,
            event.model ?? "-",
            describeChange(event),
          ]),
        ),
      );
    });
}
