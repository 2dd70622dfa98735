import { z } from "zod";

/**
 * The fields of a /v1 body the gateway reads, and nothing else: the body
 * itself goes to the engine byte for byte. Loose on purpose: a
 * field a newer client sends must not turn into a gateway refusal; the engine
 * judges the rest.
 */
const contentPartSchema = z.looseObject({ type: z.string().optional(), text: z.string().optional() });
const messageSchema = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.array(contentPartSchema), z.null()]).optional(),
});
const tokenPromptSchema = z.union([z.string(), z.array(z.string()), z.array(z.number()), z.array(z.array(z.number()))]);

export const gatewayBodySchema = z.looseObject({
  model: z.string({ message: "required: the model to use, as GET /v1/models lists it" }).min(1),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullable().optional() }).nullable().optional(),
  max_tokens: z.number().int().min(0).nullable().optional(),
  max_completion_tokens: z.number().int().min(0).nullable().optional(),
  messages: z.array(messageSchema).optional(),
  prompt: tokenPromptSchema.optional(),
  input: tokenPromptSchema.optional(),
});
export type GatewayBody = z.infer<typeof gatewayBodySchema>;
export type ChatMessage = z.infer<typeof messageSchema>;

/** A message's text: content parts other than text (images, audio) are not counted. */
export function messageText(message: ChatMessage): string {
  const content = message.content;
  if (typeof content === "string") return content;
  if (!content) return "";
  return content.map((part) => part.text ?? "").join("");
}

/** The prompt's text or token ids, as the legacy completions and embeddings APIs take it (the first prompt of a batch counts for routing). */
export function promptPieces(prompt: GatewayBody["prompt"]): { texts: string[]; tokenIds: number } {
  if (prompt === undefined) return { texts: [], tokenIds: 0 };
  if (typeof prompt === "string") return { texts: [prompt], tokenIds: 0 };
  if (prompt.length === 0) return { texts: [], tokenIds: 0 };
  if (typeof prompt[0] === "string") return { texts: prompt as string[], tokenIds: 0 };
  if (typeof prompt[0] === "number") return { texts: [], tokenIds: prompt.length };
  return { texts: [], tokenIds: (prompt as number[][]).reduce((total, ids) => total + ids.length, 0) };
}

/** The leading text that identifies a prompt's cacheable prefix (system prompt, shared context). */
export function prefixText(body: GatewayBody, length: number): string {
  if (body.messages) {
    let text = "";
    for (const message of body.messages) {
      text += `${message.role}\u0000${messageText(message)}\u0000`;
      if (text.length >= length) break;
    }
    return text.slice(0, length);
  }
  const pieces = promptPieces(body.prompt);
  return (pieces.texts[0] ?? "").slice(0, length);
}
