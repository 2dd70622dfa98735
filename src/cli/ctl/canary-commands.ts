import { admin } from "../../client/index.js";
import { InvalidArgumentError, type Command } from "commander";
import type { ArmView, CanaryView } from "../../protocol/index.js";
import { print, printJson } from "../output.js";
import { duration, positiveNumber, wholeNumber } from "../parse-option.js";
import { apiClient, ctlOptions } from "./context.js";

/** An error rate as a fraction (0.05) or a percentage (5%), 0 to 1. */
function errorRate(value: string): number {
  const trimmed = value.trim();
  const number = trimmed.endsWith("%") ? Number(trimmed.slice(0, -1)) / 100 : Number(trimmed);
  if (trimmed === "" || !Number.isFinite(number) || number < 0 || number > 1) {
    throw new InvalidArgumentError(`"${value}" is not an error rate: write 0.05 or 5% (0 aborts on any error).`);
  }
  return number;
}

function percentage(value: string): number {
  const number = positiveNumber(value.trim().replace(/%$/, ""));
  if (number > 100) throw new InvalidArgumentError(`"${value}" is not a percentage above 0 and at most 100.`);
  return number;
}

function armLine(name: string, arm: ArmView): string {
  const rate = arm.error_rate === null ? "-" : `${(arm.error_rate * 100).toFixed(1)}%`;
  return `  ${name.padEnd(7)} ${String(arm.ready_replicas).padStart(8)} ${String(arm.requests).padStart(9)} ${String(arm.errors).padStart(7)} ${rate.padStart(7)} ${(arm.p95_ms === null ? "-" : `${arm.p95_ms} ms`).padStart(9)}`;
}

/** What is in force, as a person reads it: the canary, its gate, each arm's numbers, and how it ended. */
export function canaryText(view: CanaryView): string {
  const gate = view.gate
    ? [
        view.gate.max_error_rate === null ? undefined : `error rate ≤ ${(view.gate.max_error_rate * 100).toFixed(1)}%`,
        view.gate.max_p95_ms === null ? undefined : `p95 ≤ ${view.gate.max_p95_ms} ms`,
        `≥ ${view.gate.min_requests} requests`,
        `window ${view.gate.window}`,
      ]
        .filter(Boolean)
        .join(", ")
    : "none (promote or abort by hand, or set one with `ctl model gate`)";
  return [
    `${view.model}: canary of revision ${view.revision} (stable: ${view.from_revision ?? "unnamed"}) — ${view.state}, ${view.weight}% of requests, ${view.replicas} replica${view.replicas === 1 ? "" : "s"}`,
    `  started ${view.started_at} by ${view.actor}${view.ended_at ? `, ended ${view.ended_at}` : ""}`,
    `  gate: ${gate}`,
    ...(view.decision ? [`  ${view.decision}`] : []),
    `  arm     replicas  requests  errors    rate       p95`,
    armLine("stable", view.arms.stable),
    armLine("canary", view.arms.canary),
  ].join("\n");
}

/** `ctl model canary|canaries|gate|promote|abort`: trying a model's next revision on part of its traffic. */
export function registerCanaryCommands(ctl: Command): void {
  const model = ctl.commands.find((candidate) => candidate.name() === "model") ?? ctl.command("model");
  const answer = (command: Command, view: CanaryView) => (ctlOptions(command).json ? printJson(view) : print(canaryText(view)));

  model
    .command("canary")
    .argument("<model>", "model name")
    .description("start canary replicas of another revision beside the stable ones, and send them a share of the model's requests")
    .requiredOption("--to <revision>", "the revision of the model's hub repository to try (commit, tag or branch)")
    .requiredOption("--weight <percent>", "percent of requests sent to the canary (sticky per `user` field or x-session-id header)", percentage)
    .option("--replicas <n>", "canary replicas to start (default 1); the stable replicas are kept", wholeNumber(1))
    .option("--json", "print the API's canary object")
    .action(async (name: string, options: { to: string; weight: number; replicas?: number }, command: Command) => {
      const view = await apiClient(ctlOptions(command)).send(admin.startCanary(name, {
        to: options.to,
        weight: options.weight,
        ...(options.replicas !== undefined ? { replicas: options.replicas } : {}),
      }));
      answer(command, view);
    });

  model
    .command("canaries")
    .description("each canary with its arms' live requests, errors and p95 latency since it started")
    .option("--json", "print the API's JSON ({canaries: [...]})")
    .action(async (_options, command: Command) => {
      const result = await apiClient(ctlOptions(command)).send(admin.canaries());
      if (ctlOptions(command).json) return printJson(result);
      if (result.canaries.length === 0) return print("No canaries. Start one with `llmgw ctl model canary MODEL --to REV --weight 10`.");
      print(result.canaries.map(canaryText).join("\n\n"));
    });

  model
    .command("gate")
    .argument("<model>", "model name")
    .description("limits that promote the running canary by themselves when it holds over the window, and abort it when it does not")
    .option("--max-error-rate <rate>", "abort above this share of failed requests (0.05 or 5%)", errorRate)
    .option("--max-p95 <ms>", "abort above this p95 latency, in milliseconds", wholeNumber(1))
    .requiredOption("--min-requests <n>", "decide nothing before the canary has answered this many requests in the window", wholeNumber(1))
    .option("--window <duration>", "how long it must hold before promotion, and the span its numbers are read over (default 5m)", duration)
    .option("--json", "print the API's canary object")
    .action(async (name: string, options: { maxErrorRate?: number; maxP95?: number; minRequests: number; window?: string }, command: Command) => {
      const view = await apiClient(ctlOptions(command)).send(admin.canaryGate(name, {
        ...(options.maxErrorRate !== undefined ? { max_error_rate: options.maxErrorRate } : {}),
        ...(options.maxP95 !== undefined ? { max_p95_ms: options.maxP95 } : {}),
        min_requests: options.minRequests,
        ...(options.window !== undefined ? { window: options.window } : {}),
      }));
      answer(command, view);
    });

  for (const [ending, description] of [
    ["promote", "make the canary's revision the model's (catalog change, audited) and roll the stable replicas to it, each new one ready before an old one stops"],
    ["abort", "end the canary: all requests back to stable, canary replicas drained and stopped"],
  ] as const) {
    model
      .command(ending)
      .argument("<model>", "model name")
      .description(description)
      .option("--json", "print the API's canary object")
      .action(async (name: string, _options, command: Command) => {
        answer(command, await apiClient(ctlOptions(command)).send(ending === "promote" ? admin.promoteCanary(name) : admin.abortCanary(name)));
      });
  }
}
