import { hashText, seededRandom, simulatedAnswer, type SimAnswerRequest } from "./sim-text.js";

/**
 * What a simulated choice holds beyond plain text: the tool calls the request
 * asked for, JSON the request's response_format asked for, stop sequences,
 * and the log probabilities of its tokens. Pure, so the engine's routes only shape them
 * into each API's wire form.
 */

/** A function tool as the request declares it. */
export interface SimTool {
  readonly name: string;
  readonly parameters?: unknown;
}

/** What kind of content the answer must be. */
export type SimAnswerShape =
  | { readonly kind: "text" }
  /** A JSON value: for `schema`, one that validates against it; without one, an object. */
  | { readonly kind: "json"; readonly schema?: unknown }
  /** One call of each tool, in order (several: parallel tool calls). */
  | { readonly kind: "tools"; readonly tools: readonly SimTool[] };

/** One tool call of a choice: its arguments are the choice's tokens from firstToken up to the next call's. */
export interface SimToolCall {
  readonly id: string;
  readonly name: string;
  readonly firstToken: number;
}

export interface SimChoice {
  /** The pieces the engine emits one decode step each. */
  readonly tokens: readonly string[];
  readonly finishReason: "stop" | "length" | "tool_calls";
  /** Set for tool calls: `tokens` are then their arguments' JSON, one call after another, in pieces. */
  readonly toolCalls?: readonly SimToolCall[];
}

/** Characters a piece of generated JSON carries: the usual four characters a token. */
const jsonPieceCharacters = 4;

/** How deep a schema is followed; a deeper (or recursive) one gets null below it. */
const deepestSchema = 6;

/** Schema keywords the simulation cannot honour; a schema using one is refused rather than answered with JSON that may not validate. */
const unsupportedKeywords = ["$ref", "allOf", "not", "patternProperties", "if", "dependentSchemas", "pattern"] as const;

/** The keyword of `schema` the simulation cannot generate for, if any (searched through nested schemas). */
export function unsupportedSchemaKeyword(schema: unknown, depth = 0): string | undefined {
  if (typeof schema !== "object" || schema === null || depth > deepestSchema) return undefined;
  for (const keyword of unsupportedKeywords) if (keyword in schema) return keyword;
  for (const value of Object.values(schema)) {
    const nested = Array.isArray(value) ? value : [value];
    for (const item of nested) {
      const found = unsupportedSchemaKeyword(item, depth + 1);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** A value that validates against a simple JSON schema (types, properties, items, enum, const, bounds, anyOf/oneOf). */
export function sampleJson(schema: unknown, random: () => number, name = "value", depth = 0): unknown {
  const node = record(schema);
  if (node === undefined || depth > deepestSchema) return depth > deepestSchema ? null : {};
  if ("const" in node) return node.const;
  if (Array.isArray(node.enum) && node.enum.length > 0) return node.enum[Math.floor(random() * node.enum.length)];
  const alternatives = Array.isArray(node.anyOf) ? node.anyOf : Array.isArray(node.oneOf) ? node.oneOf : undefined;
  if (alternatives && alternatives.length > 0) return sampleJson(alternatives[0], random, name, depth + 1);
  const types = Array.isArray(node.type) ? node.type : [node.type ?? (node.properties ? "object" : node.items ? "array" : "string")];
  const type = types.find((candidate) => candidate !== "null") ?? types[0];
  const minimum = typeof node.minimum === "number" ? node.minimum : 0;
  const maximum = typeof node.maximum === "number" ? node.maximum : Math.max(minimum, 100);
  switch (type) {
    case "object": {
      const properties = record(node.properties) ?? {};
      return Object.fromEntries(Object.entries(properties).map(([key, value]) => [key, sampleJson(value, random, key, depth + 1)]));
    }
    case "array": {
      const count = Math.max(typeof node.minItems === "number" ? node.minItems : 1, Math.min(typeof node.maxItems === "number" ? node.maxItems : 2, 2));
      return Array.from({ length: count }, () => sampleJson(node.items, random, name, depth + 1));
    }
    case "integer":
      return Math.ceil(minimum) + Math.floor(random() * (Math.floor(maximum) - Math.ceil(minimum) + 1));
    case "number":
      return Math.round((minimum + random() * (maximum - minimum)) * 100) / 100;
    case "boolean":
      return random() < 0.5;
    case "null":
      return null;
    default: {
      const text = `simulated ${name}`;
      const longest = typeof node.maxLength === "number" ? node.maxLength : text.length;
      const shortest = typeof node.minLength === "number" ? node.minLength : 0;
      return text.slice(0, longest).padEnd(shortest, "x");
    }
  }
}

/** JSON text cut into pieces of about a token each, so it streams and counts like generated text. */
function jsonPieces(value: unknown): string[] {
  const text = JSON.stringify(value);
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += jsonPieceCharacters) pieces.push(text.slice(start, start + jsonPieceCharacters));
  return pieces;
}

function cut(pieces: readonly string[], maxTokens: number | undefined): { tokens: string[]; cutShort: boolean } {
  if (maxTokens === undefined || pieces.length <= maxTokens) return { tokens: [...pieces], cutShort: false };
  return { tokens: pieces.slice(0, maxTokens), cutShort: true };
}

/** The tokens of `request`'s answer up to the first of its stop sequences, which is left out; undefined when none occurs. */
export function stoppedAt(tokens: readonly string[], stops: readonly string[]): string[] | undefined {
  const text = tokens.join("");
  const found = stops.map((stop) => text.indexOf(stop)).filter((at) => at >= 0);
  if (found.length === 0) return undefined;
  const end = Math.min(...found);
  const kept: string[] = [];
  let at = 0;
  for (const token of tokens) {
    if (at >= end) break;
    kept.push(token.slice(0, end - at));
    at += token.length;
  }
  return kept;
}

/** A choice's answer cut at its first stop sequence: finish "stop", as a real engine reports a matched stop. */
function withStop(choice: SimChoice, stops: readonly string[] | undefined): SimChoice {
  const kept = stops === undefined || stops.length === 0 ? undefined : stoppedAt(choice.tokens, stops);
  return kept === undefined ? choice : { ...choice, tokens: kept, finishReason: "stop" };
}

/** One call of each tool, their arguments drawn from its parameters schema, cut at max_tokens as a whole. */
function toolCallsChoice(tools: readonly SimTool[], random: () => number, maxTokens: number | undefined, idPrefix: string, index: number): SimChoice {
  const pieces: string[] = [];
  const calls: SimToolCall[] = [];
  for (const [position, tool] of tools.entries()) {
    if (maxTokens !== undefined && pieces.length >= maxTokens) break;
    calls.push({ id: `${idPrefix}-call-${index}-${position}`, name: tool.name, firstToken: pieces.length });
    pieces.push(...jsonPieces(sampleJson(tool.parameters ?? { type: "object" }, random)));
  }
  const { tokens, cutShort } = cut(pieces, maxTokens);
  // A tool call cut short is reported as length, as vLLM does: its arguments are not whole JSON.
  return { tokens, finishReason: cutShort ? "length" : "tool_calls", toolCalls: calls };
}

/**
 * The `choices` answers of one request: choice i is seeded with the
 * request's seed plus i, so n choices differ and each is reproducible.
 */
export function simulatedChoices(request: SimAnswerRequest, shape: SimAnswerShape, count: number, idPrefix: string): SimChoice[] {
  return Array.from({ length: count }, (_, index): SimChoice => {
    const seeded: SimAnswerRequest = { ...request, seed: (request.seed ?? 0) + index };
    if (shape.kind === "text") return withStop(simulatedAnswer(seeded), request.stop);
    const random = seededRandom(hashText(`${seeded.seed}\u0000${request.context ?? request.prompt}\u0000${shape.kind}`));
    if (shape.kind === "tools") return toolCallsChoice(shape.tools, random, request.maxTokens, idPrefix, index);
    const text = simulatedAnswer({ ...seeded, maxTokens: undefined }).tokens.join("");
    const value = shape.schema === undefined ? { answer: text } : sampleJson(shape.schema, random);
    const { tokens, cutShort } = cut(jsonPieces(value), request.maxTokens);
    return withStop({ tokens, finishReason: cutShort ? "length" : "stop" }, request.stop);
  });
}

/** Other tokens offered as alternatives in top_logprobs. */
const alternatives = [" the", " a", ",", ".", " and", " of", " to", " is"];

export interface SimTokenLogprob {
  readonly token: string;
  readonly logprob: number;
  readonly top: readonly { readonly token: string; readonly logprob: number }[];
}

/**
 * Log probabilities for the tokens of one choice: the chosen token is always
 * the likeliest (greedy decoding's answer), its alternatives less likely,
 * the same for the same tokens.
 */
export function simulatedLogprobs(tokens: readonly string[], top: number, seed: number): SimTokenLogprob[] {
  const random = seededRandom(hashText(`${seed}\u0000${tokens.join("")}`));
  return tokens.map((token) => {
    const logprob = -Math.round(random() * random() * 2000) / 1000;
    const others = alternatives.filter((candidate) => candidate !== token).slice(0, Math.max(0, top - 1));
    let below = logprob;
    const rest = others.map((candidate) => {
      below -= 0.5 + Math.round(random() * 2000) / 1000;
      return { token: candidate, logprob: Math.round(below * 1000) / 1000 };
    });
    return { token, logprob, top: top === 0 ? [] : [{ token, logprob }, ...rest] };
  });
}

/** A token's UTF-8 bytes, as OpenAI's logprobs carry them. */
export function tokenBytes(token: string): number[] {
  return [...Buffer.from(token, "utf8")];
}
