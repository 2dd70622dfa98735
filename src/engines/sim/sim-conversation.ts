import type { ChatCompletionRequest, ResponsesRequest } from "../openai-server/openai-request-schemas.js";

/**
 * What the simulated engine reads of a conversation, the same for the chat
 * API's messages and the Responses API's input items: the whole text (for
 * the token count and the answer's seed), what the answer echoes, the text
 * of the instructions (system and user turns, for json_object's keys), and
 * whether the turn to answer is a tool's result.
 */
export interface SimConversation {
  /** Every turn as "role: text", one a line. */
  readonly promptText: string;
  /** What the answer echoes: the last user turn's text, or a tool result's summary when a tool result is the last turn. */
  readonly prompt: string;
  /** The system and user turns' texts, latest first: where json_object's keys are looked for. */
  readonly instructions: readonly string[];
  /** Set when the last turn is a tool's result: the answer then refers to it, as a model answers the result of its own call. */
  readonly toolResult?: { readonly name: string; readonly content: string };
  /** The last user turn's text: where a tool offered with tool_choice auto is looked for by name. */
  readonly lastUserText: string;
}

interface Turn {
  readonly role: string;
  readonly text: string;
  /** For a tool result: the call it answers. */
  readonly callId?: string | undefined;
  /** For an assistant's calls: each call's id and function. */
  readonly calls?: readonly { readonly id: string; readonly name: string; readonly arguments: string }[];
}

function partsText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part: { text?: unknown }) => (typeof part.text === "string" ? part.text : "")).join(" ");
}

function conversationOf(turns: readonly Turn[]): SimConversation {
  const line = (turn: Turn) => {
    const calls = (turn.calls ?? []).map((call) => `${call.name}(${call.arguments})`).join(" ");
    return `${turn.role}: ${[turn.text, calls].filter((piece) => piece !== "").join(" ")}`;
  };
  const promptText = turns.map(line).join("\n");
  const last = turns.at(-1);
  const lastUser = [...turns].reverse().find((turn) => turn.role === "user");
  const instructions = [...turns].reverse().flatMap((turn) => (turn.role === "system" || turn.role === "developer" || turn.role === "user" ? [turn.text] : []));
  const lastUserText = lastUser?.text ?? "";
  if (last?.role === "tool") {
    const call = turns.flatMap((turn) => turn.calls ?? []).find((candidate) => candidate.id === last.callId);
    const name = call?.name ?? "tool";
    return { promptText, prompt: `the ${name} tool returned ${last.text}`, instructions, toolResult: { name, content: last.text }, lastUserText };
  }
  return { promptText, prompt: lastUser === undefined ? promptText : lastUser.text, instructions, lastUserText };
}

/** A chat completions request's messages as the simulation reads them. */
export function chatConversation(messages: ChatCompletionRequest["messages"]): SimConversation {
  return conversationOf(
    messages.map((message) => ({
      role: message.role,
      text: partsText(message.content),
      callId: message.tool_call_id ?? undefined,
      calls: (message.tool_calls ?? []).map((call) => ({ id: call.id ?? "", name: call.function?.name ?? "", arguments: call.function?.arguments ?? "" })),
    })),
  );
}

/**
 * A Responses API request's instructions and input as the simulation reads
 * them: a function_call_output item is a tool's result (not an empty user
 * turn), answering the function_call item of the same call_id.
 */
export function responsesConversation(instructions: string | null | undefined, input: ResponsesRequest["input"]): SimConversation {
  const items = typeof input === "string" ? [{ role: "user", content: input }] : input;
  const turns: Turn[] = instructions ? [{ role: "system", text: instructions }] : [];
  for (const item of items) {
    if (item.type === "function_call_output") turns.push({ role: "tool", text: partsText(item.output), callId: item.call_id });
    else if (item.type === "function_call") turns.push({ role: "assistant", text: "", calls: [{ id: item.call_id ?? "", name: item.name ?? "", arguments: item.arguments ?? "" }] });
    // Other items (reasoning, references) say nothing a simulated answer would use.
    else if (item.role !== undefined || item.type === undefined || item.type === "message") turns.push({ role: item.role ?? "user", text: partsText(item.content) });
  }
  return conversationOf(turns);
}
