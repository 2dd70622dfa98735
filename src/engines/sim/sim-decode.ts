import type { FastifyReply } from "fastify";
import type { ConcurrencyGate } from "../openai-server/concurrency-gate.js";
import { failStream, failWhole, sleepUntilOrBroken } from "./gang-failure.js";
import type { GangHealth } from "./rendezvous.js";
import type { SimFaultState } from "./sim-fault-state.js";
import type { SimMetrics } from "./sim-metrics.js";
import type { SimPrefixCache } from "./sim-prefix-cache.js";
import { decodeStepMilliseconds, timeToFirstTokenMilliseconds, type SimTiming } from "./sim-timing.js";
import type { DecodeContext, DecodePlan, DecodeWire } from "./sim-wire.js";

/** What a running simulated engine counts across requests: the requests served, and the KV tokens they hold now. */
export interface SimLoad {
  requests: number;
  tokensHeld: number;
}

/** What decoding needs of the engine: its queue, its clock, its caches and counters. */
export interface DecodeEngine {
  readonly gate: ConcurrencyGate;
  readonly metrics: SimMetrics;
  readonly timing: SimTiming;
  readonly prefixCache: SimPrefixCache;
  readonly fault: SimFaultState;
  readonly load: SimLoad;
  /** Set on rank 0 of a replica over several nodes: its requests fail when the gang breaks. */
  readonly gang?: GangHealth | undefined;
  log(line: string): void;
}

/** One generation once it holds a slot: its choices, usage and the clock it decodes on. */
interface Decoding {
  readonly context: DecodeContext;
  readonly started: number;
  readonly firstTokenAt: number;
  readonly step: number;
  /** The most tokens of any choice: the choices decode side by side, as a batch. */
  readonly longest: number;
  readonly abandoned: AbortSignal;
}

/**
 * Serves one generation: waits for a slot, "prefills", then produces every
 * choice token by token on the simulated clock, the choices side by side as
 * a batch decodes them, streaming each token as an SSE event or answering
 * once at the end. `wire` shapes the events and the whole answer of the
 * route (chat, completions, responses).
 */
export async function decodeGeneration(engine: DecodeEngine, reply: FastifyReply, plan: DecodePlan, wire: DecodeWire): Promise<void> {
  const started = performance.now();
  const abandoned = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) abandoned.abort();
  });
  let release: () => void;
  try {
    release = await engine.gate.acquire(abandoned.signal);
  } catch {
    return; // The client left while queued; there is no one to answer.
  }
  const choices = plan.choices();
  const completionTokens = choices.reduce((total, choice) => total + choice.tokens.length, 0);
  const held = plan.promptTokens + completionTokens;
  engine.load.tokensHeld += held;
  engine.load.requests += 1;
  const cached = plan.promptText === undefined ? 0 : engine.prefixCache.read(plan.promptText, plan.promptTokens);
  const usage = {
    prompt_tokens: plan.promptTokens,
    completion_tokens: completionTokens,
    total_tokens: plan.promptTokens + completionTokens,
    // As vLLM and llama-server report a prefix cache hit; left out on a miss, as before the cache.
    ...(cached > 0 ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
  };
  const admitted = performance.now();
  const decoding: Decoding = {
    context: { id: `${plan.idPrefix}-sim-${engine.load.requests}`, created: Math.floor(Date.now() / 1000), choices, usage },
    started,
    firstTokenAt: admitted + timeToFirstTokenMilliseconds(engine.timing, plan.promptTokens - cached),
    step: decodeStepMilliseconds(engine.timing),
    longest: Math.max(0, ...choices.map((choice) => choice.tokens.length)),
    abandoned: abandoned.signal,
  };
  let finished = false;
  try {
    engine.metrics.recordPromptTokens(plan.promptTokens);
    finished = plan.stream ? await streamTokens(engine, reply, wire, decoding) : await answerWhole(engine, reply, wire, decoding, completionTokens);
  } finally {
    release();
    engine.load.tokensHeld -= held;
    const milliseconds = performance.now() - started;
    const finishReason = choices[0]?.finishReason ?? "stop";
    if (finished) engine.metrics.recordFinished(milliseconds / 1000, finishReason === "tool_calls" ? "stop" : finishReason);
    engine.log(
      `POST ${plan.route} model=${plan.model} stream=${plan.stream} ` +
        `prompt_tokens=${plan.promptTokens} completion_tokens=${completionTokens}${choices.length > 1 ? ` n=${choices.length}` : ""} ` +
        `queued_ms=${(admitted - started).toFixed(0)} total_ms=${milliseconds.toFixed(0)} ${finished ? `finish=${finishReason}` : "abandoned"}`,
    );
    if (finished) engine.fault.countTowardCrash(reply.raw);
  }
}

/** Streams each token as it is due; false when the client left before the end. */
async function streamTokens(engine: DecodeEngine, reply: FastifyReply, wire: DecodeWire, decoding: Decoding): Promise<boolean> {
  const { context, firstTokenAt, step } = decoding;
  reply.hijack();
  reply.raw.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
  const send = (payload: unknown, event?: string) => reply.raw.write(`${event === undefined ? "" : `event: ${event}\n`}data: ${JSON.stringify(payload)}\n\n`);
  wire.open(send, context);
  for (let position = 0; position < decoding.longest; position += 1) {
    await sleepUntilOrBroken(firstTokenAt + position * step, engine.gang);
    if (decoding.abandoned.aborted) return false;
    if (engine.gang?.broken.aborted) {
      failStream(reply.raw, send, engine.gang, wire.done);
      return false;
    }
    if (position === 0) engine.metrics.recordTimeToFirstToken((performance.now() - decoding.started) / 1000);
    for (const [index, choice] of context.choices.entries()) {
      if (position >= choice.tokens.length) continue;
      wire.token(send, context, index, position);
      engine.metrics.recordGenerationTokens(1);
    }
  }
  wire.close(send, context);
  reply.raw.end(wire.done ? "data: [DONE]\n\n" : undefined);
  return true;
}

/** Answers once the last token is due; false when the client left before. */
async function answerWhole(engine: DecodeEngine, reply: FastifyReply, wire: DecodeWire, decoding: Decoding, completionTokens: number): Promise<boolean> {
  const { firstTokenAt, step } = decoding;
  await sleepUntilOrBroken(firstTokenAt, engine.gang);
  if (decoding.abandoned.aborted) return false;
  if (engine.gang?.broken.aborted) return await failWhole(reply, engine.gang).then(() => false);
  engine.metrics.recordTimeToFirstToken((performance.now() - decoding.started) / 1000);
  await sleepUntilOrBroken(firstTokenAt + Math.max(0, decoding.longest - 1) * step, engine.gang);
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the client may have gone during the wait
  if (decoding.abandoned.aborted) return false;
  if (engine.gang?.broken.aborted) return await failWhole(reply, engine.gang).then(() => false);
  engine.metrics.recordGenerationTokens(completionTokens);
  await reply.send(wire.whole(decoding.context));
  return true;
}
