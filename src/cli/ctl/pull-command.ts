import { admin } from "../../client/index.js";
import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import { parseDuration } from "../../catalog/light.js";
import { DomainError } from "../../errors/light.js";
import type { PullView } from "../../protocol/index.js";
import { print, printJson } from "../output.js";
import { duration } from "../parse-option.js";
import { apiClient, ctlOptions } from "./context.js";
import { describePullProgress, describePullResult, pullFinished } from "./pull-text.js";

const pollMs = 500;

interface PullOptions {
  node?: string;
  wait?: boolean;
  status?: boolean;
  timeout?: string;
}

/** `ctl model pull`: a model's weights onto the nodes of its pool ahead of its first load. */
export function registerPullCommands(ctl: Command): void {
  const model = ctl.commands.find((candidate) => candidate.name() === "model") ?? ctl.command("model");
  model
    .command("pull")
    .argument("<model>", "the model whose weights to fetch")
    .description(
      "fetch a model's weights (and adapters) into the cache of every node that could run one of its profiles, before any replica needs them, so its first load is not a download; resumes what an earlier pull fetched",
    )
    .option("--node <name>", "only this node")
    .option("--wait", "print each node's progress until every node is done, then what each holds (or its error)")
    .option("--status", "print where the last pull stands on each node, without starting one")
    .option("--timeout <duration>", "with --wait: give up after this long (default 6h)", duration)
    .option("--json", "print the API's answer (with --wait, the last one)")
    .action(async (name: string, options: PullOptions, command: Command) => {
      const client = apiClient(ctlOptions(command));
      const json = ctlOptions(command).json === true;
      let pull = await client.send(options.status ? admin.pullStatus(name, options.node) : admin.pull(name, options.node));
      if (options.wait) {
        const deadline = Date.now() + (parseDuration(options.timeout ?? "6h") ?? 6 * 3_600_000);
        const shown = new Map<string, string>();
        const show = (view: PullView) => {
          for (const node of view.nodes) {
            const line = describePullProgress(node);
            if (!json && node.state === "fetching" && shown.get(node.node) !== line) print(line);
            shown.set(node.node, line);
          }
        };
        show(pull);
        while (!pullFinished(pull)) {
          if (Date.now() > deadline) {
            throw new DomainError("internal", `gave up waiting for the pull of ${name} after ${options.timeout ?? "6h"}`, `It goes on on the nodes: \`llmgw ctl model pull ${name} --status\` shows where it stands.`);
          }
          await sleep(pollMs);
          pull = await client.send(admin.pullStatus(name, options.node));
          show(pull);
        }
      }
      if (json) printJson(pull);
      else if (options.wait || options.status || pullFinished(pull)) print(describePullResult(pull));
      else {
        for (const node of pull.nodes) print(describePullProgress(node));
        print(`Pulling in the background; \`llmgw ctl model pull ${name} --status\` shows where it stands.`);
      }
      const failed = pull.nodes.filter((node) => node.state === "failed");
      if (pullFinished(pull) && failed.length > 0) {
        if (!json) process.stderr.write(`error: the pull of ${name} failed on ${failed.map((node) => node.node).join(", ")}; pulling again resumes what was fetched.\n`);
        process.exitCode = 1;
      }
    });
}
