import { admin } from "../../client/index.js";
import type { Command } from "commander";
import { parseDuration } from "../../catalog/light.js";
import type { RolloutView } from "../../protocol/index.js";
import { print, printJson, renderTable } from "../output.js";
import { duration } from "../parse-option.js";
import { apiClient, ctlOptions } from "./context.js";
import { waitForModel } from "./wait-for-model.js";


function describeRollout(result: RolloutView): string {
  if (!result.changed) return `${result.model} is already at ${result.to}: nothing to change.`;
  const verb = result.kind === "update" ? "Updating" : "Rolling back";
  const replicas = `${result.replicas} replica${result.replicas === 1 ? "" : "s"} to replace${result.in_place ? " in place" : " (each new one ready before the old one stops)"}`;
  return `${verb} ${result.model}: ${result.from} -> ${result.to}; ${replicas}.`;
}

/** `ctl model origin|updates|update|rollback|history`: where a model's weights come from, and moving it between revisions. */
export function registerVersionCommands(ctl: Command): void {
  const model = ctl.commands.find((command) => command.name() === "model") ?? ctl.command("model");

  model
    .command("origin")
    .argument("<model>", "model name")
    .argument("[source]", "set it: hf://org/name@revision, or a URL")
    .description("show or set where a model's weights come from (the repository and revision its versions follow)")
    .option("--json", "print the API's answer")
    .action(async (name: string, source: string | undefined, _options, command: Command) => {
      const client = apiClient(ctlOptions(command));
      const view =
        await client.send(source === undefined ? admin.origin(name) : admin.setOrigin(name, source));
      if (ctlOptions(command).json) return printJson(view);
      const follows = view.repository === null ? "it follows no hub repository, so it has no revisions to update to" : `it follows ${view.repository} at ${view.revision}`;
      print(`${view.model}: origin ${view.origin ?? "(none set)"}; ${follows}.`);
    });

  model
    .command("updates")
    .description("list the models whose hub repository has a newer commit than the revision they run")
    .option("--all", "list every model that follows a repository, up to date or not")
    .option("--json", "print the API's answer ({models: [...]}, every followed model)")
    .action(async (options: { all?: boolean }, command: Command) => {
      const result = await apiClient(ctlOptions(command)).send(admin.updates());
      if (ctlOptions(command).json) return printJson(result);
      const shown = result.models.filter((row) => options.all === true || row.update_available || row.error !== null);
      if (shown.length === 0) return print(result.models.length === 0 ? "No model follows a hub repository." : `All ${result.models.length} followed model(s) are at their branch's latest commit.`);
      print(
        renderTable(
          ["MODEL", "REPOSITORY", "RUNS", "BRANCH", "LATEST", "UPDATE"],
          shown.map((row) => [row.model, row.repository, row.revision, row.branch, row.latest ?? "-", row.error !== null ? `unknown: ${row.error}` : row.update_available ? "yes" : "no"]),
        ),
      );
    });

  const rolloutCommand = (name: string, description: string, action: "update" | "rollback", withTo: boolean) => {
    const command = model
      .command(name)
      .argument("<model>", "model name")
      .description(description)
      .option("--in-place", "stop each replica before its replacement starts (when there is no room beside it)")
      .option("--wait", "wait until every replica runs the new revision, printing their states")
      .option("--timeout <duration>", "with --wait: give up after this long (default 30m)", duration)
      .option("--json", "print the API's answer");
    if (withTo) command.option("--to <revision>", "a branch, tag or commit (default: the head of the branch it follows)");
    command.action(async (modelName: string, options: { to?: string; inPlace?: boolean; wait?: boolean; timeout?: string }, self: Command) => {
      const client = apiClient(ctlOptions(self));
      const result = await client.send(admin[action](modelName, { ...(options.to !== undefined ? { to: options.to } : {}), in_place: options.inPlace === true }));
      if (ctlOptions(self).json && !options.wait) return printJson(result);
      print(describeRollout(result));
      if (options.wait && result.restart_before !== null) {
        await waitForModel(client, result.model, { since: result.restart_before, timeoutMs: parseDuration(options.timeout ?? "30m") ?? 1_800_000 });
      }
    });
  };
  rolloutCommand("update", "move a model to a newer revision of its repository, replica by replica (surge), after checking the revision's files", "update", true);
  rolloutCommand("rollback", "move a model back to the revision it ran before the last update, replica by replica (surge)", "rollback", false);

  model
    .command("history")
    .argument("<model>", "model name")
    .description("the revisions a model was moved between, by whom and when")
    .option("--json", "print the API's answer")
    .action(async (name: string, _options, command: Command) => {
      const view = await apiClient(ctlOptions(command)).send(admin.history(name));
      if (ctlOptions(command).json) return printJson(view);
      const now = `${view.model} runs ${view.revision ?? "no hub revision"}.`;
      if (view.changes.length === 0) return print(`${now} No update or rollback yet.`);
      print(
        `${now}\n` +
          renderTable(
            ["AT", "KIND", "FROM", "TO", "BY"],
            view.changes.map((change) => [change.at.replace("T", " ").replace(/\.\d+Z$/, "Z"), change.kind, change.from, change.to, change.actor_user ? `${change.actor} (${change.actor_user})` : change.actor]),
          ),
      );
    });
}
