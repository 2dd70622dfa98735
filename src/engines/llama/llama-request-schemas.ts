import { z } from "zod";
import { chatCompletionRequestSchema, completionRequestSchema } from "../openai-server/openai-request-schemas.js";

/** What the built-in engine reads beyond the shared OpenAI shapes: llama-server's own fields and those it honours. */
const engineFields = {
  /** llama-server's: reuse the slot's cached prefix (default true). */
  cache_prompt: z.boolean().nullish(),
  /** OpenAI's: token id (as a string key) to a bias from -100 to 100. */
  logit_bias: z.record(z.string(), z.number().min(-100).max(100)).nullish(),
};

const toolCallSchema = z.looseObject({ id: z.string().optional(), type: z.string().optional(), function: z.looseObject({ name: z.string(), arguments: z.string() }) });

export const llamaChatRequestSchema = chatCompletionRequestSchema.extend({
  ...engineFields,
  parallel_tool_calls: z.boolean().nullish(),
  messages: z
    .array(
      z.looseObject({
        role: z.string(),
        content: z.union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() })), z.null()]).optional(),
        tool_calls: z.array(toolCallSchema).nullish(),
        tool_call_id: z.string().nullish(),
        name: z.string().nullish(),
      }),
    )
    .min(1),
});
export type LlamaChatRequest = z.infer<typeof llamaChatRequestSchema>;

export const llamaCompletionRequestSchema = completionRequestSchema.extend({
  ...engineFields,
  echo: z.boolean().nullish(),
  best_of: z.number().int().nullish(),
  suffix: z.string().nullish(),
});
export type LlamaCompletionRequest = z.infer<typeof llamaCompletionRequestSchema>;
