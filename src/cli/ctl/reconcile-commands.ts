import { admin } from "../../client/index.js";
import type { Command } from "commander";
import { parseDuration } from "../../catalog/light.js";
import type { EventView } from "../../protocol/index.js";
import { print, printJson } from "../output.js";
import { duration, wholeNumber } from "../parse-option.js";
import { apiClient, ctlOptions } from "./context.js";
import { waitForModel } from "./wait-for-model.js";

function eventLine(event: EventView): string {
  return `${event.at.replace("T", " ").replace(/\.\d+Z$/, "Z")}  ${event.kind.padEnd(18)}  ${event.message}`;
}

/** `ctl events`, `ctl restart`, `ctl node cordon|uncordon|drain`: the reconciler's side of the CLI. */
export function registerReconcileCommands(ctl: Command): void {
  ctl
    .command("events")
    .description("what the reconciler did and refused: replicas placed, started, ready, draining, stopped, failed; models it cannot place")
    .option("--model <name>", "only this model's events")
    .option("--since <id|time>", "events after this event id, or at or after this ISO time")
    .option("--limit <n>", "how many of the newest events (default 200)", wholeNumber(1))
    .option("-f, --follow", "keep printing new events as they happen (Ctrl-C to stop)")
    .option("--json", "print the API's JSON ({events: [...]}; one event per line with --follow)")
    .action(async (options: { model?: string; since?: string; limit?: number; follow?: boolean }, command: Command) => {
      const query = new URLSearchParams();
      if (options.model) query.set("model", options.model);
      if (options.since) query.set("since", options.since);
      if (options.limit) query.set("limit", String(options.limit));
      const client = apiClient(ctlOptions(command));
      const json = ctlOptions(command).json === true;
      if (options.follow) {
        query.set("follow", "1");
        let rest = "";
        for await (const chunk of await client.stream(admin.events(Object.fromEntries(query)))) {
          const lines = (rest + chunk.toString()).split("\n");
          rest = lines.pop() ?? "";
          for (const line of lines.filter(Boolean)) print(json ? line : eventLine(JSON.parse(line) as EventView));
        }
        return;
      }
      const result = await client.send(admin.events(Object.fromEntries(query)));
      if (json) return printJson(result);
      if (result.events.length === 0) return print(options.model ? `No events for ${options.model}.` : "No events yet.");
      print(result.events.map(eventLine).join("\n"));
    });

  const restart = (command: Command) =>
    command
      .description("restart a model's replicas one by one: each new one starts beside the old, and the old drains once it is ready")
      .requiredOption("--model <name>", "the model to restart")
      .option("--in-place", "stop each replica before its replacement starts (when there is no room beside it)")
      .option("--wait", "wait until every replica is replaced and ready, printing their states")
      .option("--timeout <duration>", "with --wait: give up after this long (default 30m)", duration)
      .option("--json", "print the API's answer")
      .action(async (options: { model: string; inPlace?: boolean; wait?: boolean; timeout?: string }, self: Command) => {
        const client = apiClient(ctlOptions(self));
        const result = await client.send(admin.restart(options.model, { in_place: options.inPlace === true }));
        if (ctlOptions(self).json && !options.wait) return printJson(result);
        print(`Restarting ${result.model}${result.in_place ? " in place" : ""}: ${result.replicas} replica${result.replicas === 1 ? "" : "s"} to replace.`);
        if (options.wait) await waitForModel(client, result.model, { since: result.restart_before, timeoutMs: parseDuration(options.timeout ?? "30m") ?? 1_800_000 });
      });
  restart(ctl.command("restart"));

  const node = ctl.commands.find((candidate) => candidate.name() === "node") ?? ctl.command("node");
  for (const [action, description] of [
    ["cordon", "place nothing new on a node (what runs there stays)"],
    ["uncordon", "let replicas be placed on a node again"],
    ["drain", "move a node's replicas elsewhere (each new one starts before the old one stops, where there is room) and cordon it"],
  ] as const) {
    node
      .command(action)
      .argument("<name>", "node name")
      .description(description)
      .option("--json", "print the API's node object")
      .action(async (name: string, _options, command: Command) => {
        const view = await apiClient(ctlOptions(command)).send(admin[action](name));
        if (ctlOptions(command).json) return printJson(view);
        const what = view.draining ? "draining: its replicas move elsewhere" : view.cordoned ? "cordoned: nothing new is placed there" : "schedulable again";
        print(`Node ${view.name} is ${what}.`);
      });
  }
}
