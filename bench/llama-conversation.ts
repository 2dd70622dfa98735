/**
 * The prompt cache's effect on a conversation: the time to the first token
 * of its tenth turn, each turn's answer appended to the next prompt, with
 * the slot's cache (llama-server's cache_prompt, on by default) and without
 * it (cache_prompt false: every turn reads the whole conversation again).
 * Both run on one engine, alternating, each conversation with its own
 * opening so no run finds another's turns in the cache.
 */
import { readStreamedChat } from "./stream-chat.js";
import { performance } from "node:perf_hooks";

export const conversationTurns = 10;
const answerTokens = 16;
const conversations = 3;
// About 60 tokens of the tiny model's byte-level vocabulary per user turn.
const userTurn = (run: number, turn: number) => `Run ${run}, turn ${turn}: tell me what the quick brown fox did next, and why the dog slept.`;

export interface ConversationTurn {
  readonly prompt_tokens: number;
  /** Prompt tokens evaluated (llama-server's timings.prompt_n). */
  readonly prompt_evaluated: number;
  /** Prompt tokens kept from the slot's cache (timings.cache_n). */
  readonly prompt_cached: number;
  readonly first_token_ms: number;
}

export interface ConversationResult {
  readonly cache_on: ConversationTurn;
  readonly cache_off: ConversationTurn;
}

interface Streamed extends ConversationTurn {
  readonly text: string;
}

type Message = { role: "user" | "assistant"; content: string };

async function streamTurn(baseUrl: string, messages: readonly Message[], cachePrompt: boolean): Promise<Streamed> {
  const started = performance.now();
  const response = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tiny", messages, max_tokens: answerTokens, temperature: 0, stream: true, stream_options: { include_usage: true }, cache_prompt: cachePrompt }),
  });
  if (!response.ok || !response.body) throw new Error(`a conversation turn failed: ${response.status} ${await response.text()}`);
  const { firstAt, text, usage, timings } = await readStreamedChat(response.body);
  if (firstAt === undefined || timings === undefined) throw new Error("a conversation turn streamed no text or no timings");
  return { text, prompt_tokens: usage?.prompt_tokens ?? 0, prompt_evaluated: timings.prompt_n, prompt_cached: timings.cache_n, first_token_ms: firstAt - started };
}

async function tenthTurn(baseUrl: string, run: number, cachePrompt: boolean): Promise<ConversationTurn> {
  const messages: Message[] = [];
  let last: Streamed | undefined;
  for (let turn = 1; turn <= conversationTurns; turn += 1) {
    messages.push({ role: "user", content: userTurn(run, turn) });
    last = await streamTurn(baseUrl, messages, cachePrompt);
    messages.push({ role: "assistant", content: last.text });
  }
  const { text: _text, ...turn } = last as Streamed;
  return turn;
}

function medianTurn(turns: readonly ConversationTurn[]): ConversationTurn {
  const sorted = [...turns].sort((left, right) => left.first_token_ms - right.first_token_ms);
  return sorted[Math.floor(sorted.length / 2)] as ConversationTurn;
}

/** Tenth-turn figures with and without the cache, medians of a few conversations each, on an engine already serving "tiny". */
export async function conversationBench(baseUrl: string): Promise<ConversationResult> {
  await tenthTurn(baseUrl, 0, true); // warm-up
  const on: ConversationTurn[] = [];
  const off: ConversationTurn[] = [];
  for (let run = 1; run <= conversations; run += 1) {
    on.push(await tenthTurn(baseUrl, run, true));
    off.push(await tenthTurn(baseUrl, run + 100, false));
  }
  return { cache_on: medianTurn(on), cache_off: medianTurn(off) };
}

export function renderConversation(result: ConversationResult): string {
  const row = (name: string, turn: ConversationTurn) => `| ${name} | ${turn.prompt_tokens} | ${turn.prompt_cached} | ${turn.prompt_evaluated} | ${turn.first_token_ms.toFixed(1)} |`;
  return [
    `### The prompt cache: time to first token of a conversation's tenth turn`,
    "",
    `Each turn's ${answerTokens}-token answer is appended to the next prompt; streamed, temperature 0, straight to the engine (one slot of 4,096 tokens on 2 threads). Medians of ${conversations} conversations each, alternating.`,
    "",
    "| cache_prompt | prompt tokens | reused from the slot | evaluated | time to first token (ms) |",
    "| --- | ---: | ---: | ---: | ---: |",
    row("true (default)", result.cache_on),
    row("false", result.cache_off),
    "",
    `The cache cuts the tenth turn's time to first token ${(result.cache_off.first_token_ms / Math.max(0.001, result.cache_on.first_token_ms)).toFixed(1)}×.`,
  ].join("\n");
}
