import { admin, type ApiClient } from "../../client/index.js";
import { setTimeout as sleep } from "node:timers/promises";
import { DomainError } from "../../errors/light.js";
import { print } from "../output.js";
import { describeReplicaState } from "./nodes-commands.js";

const pollMs = 500;

/**
 * Waits until a model serves from replicas started at or after `since` (all
 * of them, for a restart), printing each replica's state as it changes
 * (pending, fetching 42% of 15 GiB, starting, ready). Throws with the reason
 * at the first failure or refusal after `since`, so the command exits
 * non-zero saying why.
 */
export async function waitForModel(
  client: ApiClient,
  name: string,
  options: { since: string; timeoutMs: number; say?: (line: string) => void; /** The last line (ready, or why nothing starts) is returned, not said. */ holdReadyLine?: boolean },
): Promise<string> {
  const say = options.say ?? print;
  const shown = new Map<string, string>();
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const [model, { replicas }] = await Promise.all([
      client.send(admin.model(name)),
      client.send(admin.replicas({ model: name })),
    ]);
    for (const replica of replicas) {
      const line = `${replica.id} on ${replica.node}: ${describeReplicaState(replica)}`;
      if (shown.get(replica.id) !== line) say(line);
      shown.set(replica.id, line);
    }
    if (model.last_failure && model.last_failure.at >= options.since) {
      throw new DomainError("engine_failed", `${name}: a replica failed: ${model.last_failure.reason}`, `See \`llmgw ctl events --model ${name}\` and the replica's log; the reconciler tries again${model.last_failure.retry_at ? ` at ${model.last_failure.retry_at}` : ""}.`);
    }
    if (model.placement?.state === "unplaceable") {
      throw new DomainError(
        "does_not_fit",
        `${name} cannot be placed now: ${model.placement.reason ?? "no reason given"}`,
        `It stays in the catalog, and the reconciler places it when room comes: free cards (\`llmgw ctl replicas\` shows what holds them), add a node, or change the model's profiles; \`llmgw ctl model remove ${name}\` takes it out.`,
      );
    }
    if (model.scaling.max === 0 || (model.scaling.min === 0 && replicas.length === 0)) {
      const settled = model.scaling.max === 0 ? `${name} is kept in the catalog only (max 0): nothing starts.` : `${name} runs on demand: nothing starts until a request comes.`;
      if (!options.holdReadyLine) say(settled);
      return settled;
    }
    const serving = replicas.filter((replica) => replica.state === "ready");
    const old = replicas.filter((replica) => replica.created_at < options.since && replica.state !== "stopped" && replica.state !== "failed");
    if (serving.length >= Math.max(model.scaling.min, 1) && old.length === 0 && serving.every((replica) => replica.created_at >= options.since)) {
      const ready = `${name} is ready: ${serving.length} replica${serving.length === 1 ? "" : "s"} serving.`;
      // A caller with more to print says it last, where the eye ends.
      if (!options.holdReadyLine) say(ready);
      return ready;
    }
    if (Date.now() > deadline) {
      throw new DomainError("internal", `gave up waiting for ${name} after ${Math.round(options.timeoutMs / 1000)} s`, `It may still become ready: follow it with \`llmgw ctl events --model ${name} --follow\`.`);
    }
    await sleep(pollMs);
  }
}
