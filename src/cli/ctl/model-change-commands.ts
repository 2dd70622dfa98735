import { admin } from "../../client/index.js";
import type { Command } from "commander";
import { parseDuration } from "../../catalog/light.js";
import type { ModelChangeSettings, ModelChangeView } from "../../protocol/index.js";
import { print, printJson } from "../output.js";
import { duration, tokenCount, wholeNumber } from "../parse-option.js";
import { apiClient, ctlOptions } from "./context.js";
import { waitForModel } from "./wait-for-model.js";

interface ChangeOptions {
  inPlace?: boolean;
  uncheckedMemory?: boolean;
  wait?: boolean;
  timeout?: string;
}

const cards = (count: number) => `${count} card${count === 1 ? "" : "s"}`;

function contextLine(settings: ModelChangeSettings): string {
  const slots = settings.profiles.filter((profile) => profile.engine === "llamacpp").map((profile) => `${profile.slots} slots (${profile.name})`);
  return `${settings.context ?? "engine default"} tokens${slots.length > 0 ? `, ${slots.join(", ")}` : ""}`;
}

/** "qwen/h100: 1 card → 2 cards per replica", for each profile whose count changed (all of them, as in force, when none did). */
function cardsLines(view: ModelChangeView): string[] {
  const lines = view.after.profiles.flatMap((profile) => {
    const before = view.before.profiles.find((candidate) => candidate.name === profile.name)?.gpus;
    return before === undefined || before === profile.gpus ? [] : [`${view.model}/${profile.name}: ${cards(before)} → ${cards(profile.gpus)} per replica`];
  });
  return lines.length > 0 ? lines : view.after.profiles.map((profile) => `${view.model}/${profile.name}: ${cards(profile.gpus)} per replica`);
}

/** Checked against figures kept from an earlier read: said, with why the files cannot be read now. */
function storedFiguresLines(view: ModelChangeView): string[] {
  return (view.stored_figures ?? []).map((figures) => `Checked against the figures read from ${figures.source} at ${figures.read_at}: its files cannot be read now (${figures.unreadable}).`);
}

/** What is in force now, what each profile's engine will be started with, and the roll. */
export function describeModelChange(view: ModelChangeView): string {
  if (view.restart_before === null) {
    const inForce = view.change === "context" ? [`${view.model}: context already ${contextLine(view.after)}`] : cardsLines(view).map((line) => `${line} already`);
    return [...inForce, "Nothing changed; nothing restarts.", ...storedFiguresLines(view)].join("\n");
  }
  const lines = view.change === "context" ? [`${view.model}: context ${contextLine(view.before)} → ${contextLine(view.after)}`] : cardsLines(view);
  for (const profile of view.profiles) {
    if (profile.arguments.length === 0) continue;
    const flags = profile.arguments.map((argument) => `${argument.flag} ${argument.before ?? "(none)"} → ${argument.after ?? "(none)"}`);
    lines.push(`  ${profile.profile} (${profile.engine}): ${flags.join(", ")}`);
  }
  const count = `${view.replicas} replica${view.replicas === 1 ? "" : "s"}`;
  lines.push(
    view.replicas === 0
      ? "No replica runs: the next one starts with these settings."
      : `Restarting ${count}${view.in_place ? " in place (each stops before its replacement starts)" : " (each new one starts beside the old, which drains once it is ready)"}.`,
  );
  return [...lines, ...storedFiguresLines(view)].join("\n");
}

async function send(command: Command, model: string, route: "context" | "gpus", body: Record<string, unknown>, options: ChangeOptions): Promise<void> {
  const client = apiClient(ctlOptions(command));
  const view = await client.send(admin[route](model, { ...body, ...(options.inPlace ? { in_place: true } : {}), ...(options.uncheckedMemory ? { unchecked_memory: true } : {}) }));
  const json = ctlOptions(command).json === true;
  if (json && !options.wait) return printJson(view);
  print(describeModelChange(view));
  if (options.wait && view.restart_before !== null) {
    await waitForModel(client, view.model, { since: view.restart_before, timeoutMs: parseDuration(options.timeout ?? "30m") ?? 1_800_000 });
  }
}

const withRollOptions = (command: Command) =>
  command
    .option("--in-place", "stop each replica before its replacement starts (when there is no room beside it)")
    .option("--wait", "wait until every replica is replaced and ready, printing their states")
    .option("--timeout <duration>", "with --wait: give up after this long (default 30m)", duration)
    .option(
      "--unchecked-memory",
      "when the server cannot read the model's files: change it anyway, unchecked against its trained context, its heads and its cards' memory (a replica that does not fit fails to start on its node)",
    )
    .option("--json", "print the API's answer");

/** `ctl model context` and `ctl model gpus`: changes checked against the model's files and the fleet, then rolled out by surge. */
export function registerModelChangeCommands(ctl: Command): void {
  const model = ctl.commands.find((candidate) => candidate.name() === "model") ?? ctl.command("model");

  withRollOptions(
    model
      .command("context")
      .argument("<name>", "the model")
      .argument("<tokens>", "tokens one request may use: 32768, 32k or 1M (k = 1024)", tokenCount)
      .description("change a model's context: the catalog, each engine's arguments and the KV memory together, checked against what it was trained for and what its cards hold; then roll its replicas")
      .option("--slots <n>", "llama.cpp: requests served at once, each with the full context (its --ctx-size is slots × tokens)", wholeNumber(1)),
  ).action(async (name: string, tokens: number, options: ChangeOptions & { slots?: number }, command: Command) => {
    await send(command, name, "context", { context: tokens, ...(options.slots !== undefined ? { slots: options.slots } : {}) }, options);
  });

  withRollOptions(
    model
      .command("gpus")
      .argument("<name>", "the model")
      .argument("<count>", "cards per replica (per node, for a replica over several nodes): tensor parallel for vLLM, SGLang and TensorRT-LLM; layers split for llama.cpp", wholeNumber(0))
      .description("change a model's cards per replica, checked against its heads, its memory and the nodes of its pool; then roll its replicas")
      .option("--profile <name>", "the profile to change (default: the model's one profile on cards; a CPU profile only when named)")
      .option("--nodes <n>", "nodes one replica spans, each giving <count> cards (vLLM and SGLang; default: unchanged)", wholeNumber(1, 8)),
  ).action(async (name: string, count: number, options: ChangeOptions & { profile?: string; nodes?: number }, command: Command) => {
    await send(command, name, "gpus", { gpus: count, ...(options.profile !== undefined ? { profile: options.profile } : {}), ...(options.nodes !== undefined ? { nodes: options.nodes } : {}) }, options);
  });
}
