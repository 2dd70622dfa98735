import { admin } from "../../client/index.js";
import { readFileSync } from "node:fs";
import path from "node:path";
import { Command } from "commander";
import type { ModelView } from "../../protocol/index.js";
import { comfyuiNodesNote } from "./comfyui-nodes-note.js";
import { modelClasses, parseDuration } from "../../catalog/light.js";
import { DomainError } from "../../errors/light.js";
import { print, printJson, renderTable } from "../output.js";
import { duration, positiveNumber, wholeNumber } from "../parse-option.js";
import { apiClient, ctlOptions } from "./context.js";
import { printedLlmgwCommand } from "../invocation.js";
import { describeModel, describeScaling, profileSummary } from "./model-text.js";
import { registerPlanCommand } from "./plan-command.js";
import { addPreset } from "./presets-commands.js";
import { waitForModel } from "./wait-for-model.js";
import { addModel, describeSourcesChecked, keepUnplaceableHelp, noSourceCheckHelp } from "./add-model.js";


/** Prints a changed model as it is now in force (not an echo of the request), or the API's JSON. */
function printModel(command: Command, model: ModelView, headline: string): void {
  if (ctlOptions(command).json) return printJson(model);
  print(`${headline}\n${describeModel(model)}`);
}

/** Under the table, why each model that should run does not: the placement's refusal, or its last failure. */
function unplacedLines(models: readonly ModelView[]): string {
  const lines = models.flatMap((model) => {
    if (model.placement?.state === "unplaceable" || model.placement?.state === "waiting") return [`${model.name}: ${model.placement.state}: ${model.placement.reason ?? "-"}`];
    // Failures in a row reset to 0 at the next ready replica, so a count above 0 means "still failing",
    // also in the moment between the end of a backoff and the next failure (when retry_at is null).
    if (model.last_failure && model.last_failure.failures > 0) {
      const next = model.last_failure.retry_at ? `next start at ${model.last_failure.retry_at}` : "starting again now";
      return [`${model.name}: failing (${model.last_failure.failures} in a row; ${next}): ${model.last_failure.reason.split("\n")[0]}`];
    }
    return [];
  });
  return lines.length > 0 ? `\n\n${lines.join("\n")}` : "";
}

export function registerModelsCommands(ctl: Command): void {
  ctl
    .command("models")
    .description("list the catalog: every model, where it is defined, its state and replicas")
    .option("--json", "print the API's JSON ({models: [...]}) for tools")
    .action(async (_options, command: Command) => {
      const result = await apiClient(ctlOptions(command)).all(admin.models(), "models");
      if (ctlOptions(command).json) return printJson(result);
      if (result.models.length === 0) return print(`The catalog is empty. Add a model with \`${printedLlmgwCommand()} ctl model add -f model.yaml\`, or declare one in server.yaml.`);
      print(
        renderTable(
          ["NAME", "SOURCE", "STATE", "READY", "CLASS", "SCALING", "PROFILES", "OWNER"],
          result.models.map((model) => [
            model.name,
            model.source,
            model.state,
            `${model.replicas.ready}/${model.replicas.desired}`,
            model.class,
            model.external ? "-" : `${model.scaling.min}..${model.scaling.max}`,
            profileSummary(model),
            model.owner ?? "-",
          ]),
        ) + unplacedLines(result.models),
      );
    });

  const model = ctl.command("model").description("show and change one model");
  registerPlanCommand(model);

  model
    .command("show")
    .argument("<name>", "model name")
    .description("show one model as it is in force")
    .option("--json", "print the API's model object")
    .action(async (name: string, _options, command: Command) => {
      const view = await apiClient(ctlOptions(command)).send(admin.model(name));
      if (ctlOptions(command).json) return printJson(view);
      print(describeModel(view));
    });

  model
    .command("add")
    .argument("[preset]", "a preset shipped with llmgw (`ctl model presets` lists them)")
    .description("add a model at runtime: a shipped preset by name, or a YAML file with -f (one entry, the same YAML as in server.yaml)")
    .option("-f, --file <file>", "the model entry")
    .option("--name <name>", "with PRESET: add it under this name instead of the preset's")
    .option("--wait", "wait until its replicas are ready, printing their states; exit non-zero with the reason when it fails")
    .option("--timeout <duration>", "with --wait: give up after this long (default 30m)", duration)
    .option("--no-source-check", noSourceCheckHelp)
    .option("--keep-unplaceable", keepUnplaceableHelp)
    .option("--json", "print the API's answer: the model, and the sources the server read (sources_checked)")
    .action(async (preset: string | undefined, options: { file?: string; name?: string; wait?: boolean; timeout?: string; sourceCheck: boolean; keepUnplaceable?: boolean }, command: Command) => {
      const wait = async (name: string) => {
        if (options.wait) await waitForModel(apiClient(ctlOptions(command)), name, { since: new Date(0).toISOString(), timeoutMs: parseDuration(options.timeout ?? "30m") ?? 1_800_000 });
      };
      if (preset !== undefined && options.file !== undefined) {
        throw new DomainError("invalid_input", `both a preset (${preset}) and a file (-f ${options.file}) were given`, "Give one: `ctl model add PRESET` or `ctl model add -f FILE`.");
      }
      if (preset !== undefined) return wait((await addPreset(command, preset, options.name, { sourceCheck: options.sourceCheck, keepUnplaceable: options.keepUnplaceable })).name);
      if (options.file === undefined) {
        throw new DomainError("invalid_input", "no model was given to add", "Give a preset's name (`llmgw ctl model presets` lists them) or a model file with -f FILE.");
      }
      if (options.name !== undefined) {
        throw new DomainError("invalid_input", "--name renames a preset, and a file was given", "Write the name in the file's `name:` field.");
      }
      let text: string;
      try {
        text = readFileSync(options.file, "utf8");
      } catch (error) {
        throw new DomainError("invalid_input", `cannot read ${options.file}: ${(error as Error).message}`, "Check the path given to -f.");
      }
      // Checked here too, so a mistake is reported with its line and column in the file.
      // Loaded when run: the YAML parser and the schema would slow every other ctl call's start.
      const { parseModelFile } = await import("../../catalog/index.js");
      const entry = parseModelFile(text, path.basename(options.file));
      const client = apiClient(ctlOptions(command));
      const added = await addModel(client, entry, { sourceCheck: options.sourceCheck, keepUnplaceable: options.keepUnplaceable === true });
      if (ctlOptions(command).json) printJson(added);
      else print(`Added ${added.name}.\n${describeModel(added)}\n\n${describeSourcesChecked(added)}`);
      if (!ctlOptions(command).json && added.profiles.some((profile) => profile.engine === "comfyui")) print(comfyuiNodesNote(added, (await client.all(admin.nodes(), "nodes")).nodes));
      await wait(added.name);
    });

  model
    .command("remove")
    .argument("<name>", "model name")
    .description("remove a model added at runtime (declared models are removed from server.yaml)")
    .option("--json", "print the API's answer")
    .action(async (name: string, _options, command: Command) => {
      const result = await apiClient(ctlOptions(command)).send(admin.removeModel(name));
      if (ctlOptions(command).json) return printJson(result);
      print(`Removed ${result.removed} from the catalog.`);
    });

  const scale = (command: Command) =>
    command
      .argument("<name>", "model name")
      .description("set how many replicas run: min is the count kept running, max the ceiling for growth; min 0 runs on demand")
      .option("--min <n>", "replicas always running (0: on demand)", wholeNumber(0))
      .option("--max <n>", "ceiling under load (default: at least min)", wholeNumber(0))
      .option("--idle-timeout <duration>", "on demand: stop after this long without requests (e.g. 10m)", duration)
      .option("--json", "print the API's model object")
      .action(async (name: string, options: { min?: number; max?: number; idleTimeout?: string }, self: Command) => {
        if (options.min === undefined && options.max === undefined && options.idleTimeout === undefined) {
          throw new DomainError("invalid_input", "scale needs --min, --max or --idle-timeout", `For example: \`llmgw ctl scale ${name} --min 1 --max 3\``);
        }
        const body = { min: options.min, max: options.max, idle_timeout: options.idleTimeout };
        const view = await apiClient(ctlOptions(self)).send(admin.scale(name, body));
        printModel(self, view, `${view.name} now scales ${describeScaling(view)}.`);
        // Accepted, but the fleet cannot hold the count now: said at once, not found later in `ctl models`.
        if (!ctlOptions(self).json && view.placement?.state === "unplaceable") {
          process.stderr.write(
            `warning: not every replica of ${view.name} fits now: ${view.placement.reason ?? "no node has room"}\n` +
              `The reconciler places the rest when room comes (free cards, or a node joins); \`${printedLlmgwCommand()} ctl models\` shows ${view.name} ready against the ${view.replicas.desired} asked for meanwhile.\n`,
          );
        }
      });
  scale(ctl.command("scale"));
  scale(model.command("scale"));

  model
    .command("resources")
    .argument("<name>", "model name")
    .description("set the host memory and CPU cores a replica reserves (the model's profile on cards, or its only profile, unless --profile)")
    .requiredOption("--memory <gb>", "host memory in GB", positiveNumber)
    .option("--cores <n>", "CPU cores", positiveNumber)
    .option("--profile <profile>", "which profile (see `ctl model show`)")
    .option("--json", "print the API's model object")
    .action(async (name: string, options: { memory: number; cores?: number; profile?: string }, command: Command) => {
      const view = await apiClient(ctlOptions(command)).send(admin.resources(name, {
        profile: options.profile,
        memory_gb: options.memory,
        cpu_cores: options.cores,
      }));
      // The server chose the profile when none was named: it is the one that now holds these figures.
      const acted = options.profile ?? view.profiles.find((profile) => profile.memory_gb === options.memory && (options.cores === undefined || profile.cpu_cores === options.cores))?.name;
      printModel(command, view, `Resources of ${view.name}${acted === undefined ? "" : `/${acted}`} changed: ${options.memory} GB host memory${options.cores === undefined ? "" : `, ${options.cores} CPU cores`} per replica.`);
    });

  model
    .command("class")
    .argument("<name>", "model name")
    .argument("<class>", `${modelClasses.join("|")}|default`)
    .description("set who gives way to whom when cards are short (default: opportunistic on demand, standard otherwise)")
    .option("--json", "print the API's model object")
    .action(async (name: string, modelClass: string, _options, command: Command) => {
      const view = await apiClient(ctlOptions(command)).send(admin.modelClass(name, modelClass));
      printModel(command, view, `${view.name} is now ${view.class}${view.class_set ? "" : " (its default)"}.`);
    });

  model
    .command("owner")
    .argument("<name>", "model name")
    .argument("<owner>", "a team or a person")
    .description("set who owns a model")
    .option("--json", "print the API's model object")
    .action(async (name: string, owner: string, _options, command: Command) => {
      const view = await apiClient(ctlOptions(command)).send(admin.owner(name, owner));
      printModel(command, view, `${view.name} is now owned by ${view.owner}.`);
    });

  model
    .command("target")
    .argument("<name>", "model name")
    .option("--in-flight <n>", "grow toward max while replicas carry more than this many requests each", wholeNumber(1))
    .option("--clear", "no growth under load: run min replicas")
    .description("set the load per replica above which the model grows toward its max (and shrinks after a cool-down)")
    .option("--json", "print the API's model object")
    .action(async (name: string, options: { inFlight?: number; clear?: boolean }, command: Command) => {
      if (options.inFlight === undefined && !options.clear) {
        throw new DomainError("invalid_input", "target needs --in-flight N or --clear", `For example: llmgw ctl model target ${name} --in-flight 8`);
      }
      const view = await apiClient(ctlOptions(command)).send(admin.target(name, options.clear ? null : (options.inFlight ?? null)));
      printModel(command, view, view.target ? `${view.name} now grows toward ${view.scaling.max} replicas while each carries more than ${view.target.in_flight} requests.` : `${view.name} has no target now: it runs ${view.scaling.min} replicas.`);
    });

  model
    .command("fallbacks")
    .argument("<name>", "model name")
    .argument("[fallbacks]", "comma-separated models to try in order when this one cannot answer")
    .option("--clear", "remove every fallback")
    .description("set the models tried in order when this one cannot answer")
    .option("--json", "print the API's model object")
    .action(async (name: string, list: string | undefined, options: { clear?: boolean }, command: Command) => {
      if (list === undefined && !options.clear) {
        throw new DomainError("invalid_input", "fallbacks needs a list or --clear", `For example: \`llmgw ctl model fallbacks ${name} small-model,tiny-model\``);
      }
      const fallbacks = options.clear ? [] : (list ?? "").split(",").map((item) => item.trim()).filter(Boolean);
      const view = await apiClient(ctlOptions(command)).send(admin.fallbacks(name, fallbacks));
      printModel(command, view, view.fallbacks.length ? `${view.name} now falls back to ${view.fallbacks.join(", then ")}.` : `${view.name} has no fallbacks now.`);
    });
}
