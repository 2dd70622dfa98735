import { z } from "zod";

/**
 * The parts of OpenAI request bodies the engines llmgw serves itself read
 * (the simulated engine wholly, the built-in llama.cpp as the base of its
 * own). Objects are loose: real engines accept the many fields clients send
 * (user, metadata, store...) and so must these; only what is read is checked.
 */

/**
 * max_tokens beyond this is refused: with ignore_eos the engine builds every
 * token, and the bound keeps one request from filling memory.
 */
export const largestMaxTokens = 200_000;

const maxTokensSchema = z.number().int().min(1).max(largestMaxTokens).nullish();

const streamOptionsSchema = z.looseObject({ include_usage: z.boolean().nullish() }).nullish();

/**
 * How engines other than vLLM pick a LoRA adapter: llama-server's `lora`
 * ([{id, scale}], by position on its command line) and SGLang's `lora_path`
 * (the adapter's name). vLLM and SGLang also take the adapter's name as the model.
 */
const adapterSelectionFields = {
  lora: z.array(z.looseObject({ id: z.number().int(), scale: z.number() })).nullish(),
  lora_path: z.string().nullish(),
};

const contentPartSchema = z.looseObject({ type: z.string(), text: z.string().optional() });

/**
 * Answers per request. vLLM takes more; the bound keeps one request from
 * holding a slot's worth of answers for each of hundreds of choices.
 */
export const mostChoices = 16;

/**
 * What every text route shares: choices, the seed that makes an answer
 * reproducible, and the sampling parameters. Their types are checked here (a
 * string temperature is a 400 naming it); their ranges, in vLLM's words, by
 * samplingRefusal.
 */
const samplingFields = {
  n: z.number().int().min(1).max(mostChoices).nullish(),
  seed: z.number().int().nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  top_k: z.number().int().nullish(),
  min_p: z.number().nullish(),
  presence_penalty: z.number().nullish(),
  frequency_penalty: z.number().nullish(),
  repetition_penalty: z.number().nullish(),
  /** Where the answer ends before its text would contain one of these (the text itself is left out). */
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
};

const toolSchema = z.looseObject({ type: z.string(), function: z.looseObject({ name: z.string().min(1), parameters: z.unknown().optional() }) });
const toolChoiceSchema = z.union([z.enum(["none", "auto", "required"]), z.looseObject({ type: z.literal("function"), function: z.looseObject({ name: z.string().min(1) }) })]);
export const responseFormatSchema = z.looseObject({
  type: z.enum(["text", "json_object", "json_schema"]),
  json_schema: z.looseObject({ name: z.string().optional(), schema: z.unknown().optional() }).optional(),
});

export const chatCompletionRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z
    .array(
      z.looseObject({
        role: z.string(),
        content: z.union([z.string(), z.array(contentPartSchema), z.null()]).optional(),
        /** A tool result's answer to an assistant's call (role "tool"). */
        tool_call_id: z.string().nullish(),
        /** An assistant's earlier calls, which a later tool result answers by id. */
        tool_calls: z.array(z.looseObject({ id: z.string().optional(), function: z.looseObject({ name: z.string(), arguments: z.string().optional() }).optional() })).nullish(),
      }),
    )
    .min(1),
  max_tokens: maxTokensSchema,
  max_completion_tokens: maxTokensSchema,
  stream: z.boolean().nullish(),
  stream_options: streamOptionsSchema,
  /** vLLM's sampling extension: generate exactly max_tokens. */
  ignore_eos: z.boolean().nullish(),
  ...samplingFields,
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  tools: z.array(toolSchema).nullish(),
  tool_choice: toolChoiceSchema.nullish(),
  /** false: at most one tool call per answer. */
  parallel_tool_calls: z.boolean().nullish(),
  response_format: responseFormatSchema.nullish(),
  ...adapterSelectionFields,
});
export type ChatCompletionRequest = z.infer<typeof chatCompletionRequestSchema>;

export const completionRequestSchema = z.looseObject({
  model: z.string().min(1),
  prompt: z.union([z.string(), z.array(z.string()).length(1), z.array(z.number().int()).min(1), z.array(z.array(z.number().int())).length(1)]),
  max_tokens: maxTokensSchema,
  stream: z.boolean().nullish(),
  stream_options: streamOptionsSchema,
  ignore_eos: z.boolean().nullish(),
  ...samplingFields,
  /** The legacy API's form: how many alternatives per token, 0 to 5. */
  logprobs: z.number().int().min(0).max(5).nullish(),
  ...adapterSelectionFields,
});
export type CompletionRequest = z.infer<typeof completionRequestSchema>;

export const embeddingRequestSchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([
    z.string(),
    z.array(z.string()).min(1).max(2048),
    z.array(z.number().int()).min(1),
    z.array(z.array(z.number().int()).min(1)).min(1).max(2048),
  ]),
  encoding_format: z.enum(["float", "base64"]).nullish(),
  dimensions: z.number().int().min(1).max(8192).nullish(),
});
export type EmbeddingRequest = z.infer<typeof embeddingRequestSchema>;

/** OpenAI's Responses API, the parts the simulated engine reads (vLLM's ResponsesRequest takes the same). */
export const responsesRequestSchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([
    z.string(),
    z.array(
      z.looseObject({
        role: z.string().optional(),
        type: z.string().optional(),
        content: z.union([z.string(), z.array(contentPartSchema)]).optional(),
        /** A function_call item (the model's earlier call) and the function_call_output that answers it. */
        call_id: z.string().optional(),
        name: z.string().optional(),
        arguments: z.string().optional(),
        output: z.union([z.string(), z.array(contentPartSchema)]).optional(),
      }),
    ),
  ]),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  instructions: z.string().nullish(),
  max_output_tokens: maxTokensSchema,
  stream: z.boolean().nullish(),
  text: z
    .looseObject({ format: z.looseObject({ type: z.enum(["text", "json_object", "json_schema"]), name: z.string().optional(), schema: z.unknown().optional() }).optional() })
    .nullish(),
  tools: z.array(z.looseObject({ type: z.string(), name: z.string().min(1).optional(), parameters: z.unknown().optional() })).nullish(),
  tool_choice: z.union([z.enum(["none", "auto", "required"]), z.looseObject({ type: z.literal("function"), name: z.string().min(1) })]).nullish(),
});
export type ResponsesRequest = z.infer<typeof responsesRequestSchema>;

/** vLLM's, SGLang's and llama-server's rerank body: a query and the documents to rank against it. */
export const rerankRequestSchema = z.looseObject({
  model: z.string().min(1),
  query: z.string(),
  documents: z.array(z.union([z.string(), z.looseObject({ text: z.string() })])).min(1).max(2048),
  top_n: z.number().int().min(0).nullish(),
});

/** vLLM's score body: text_1 against each text_2, or pairs when both are lists. */
export const scoreRequestSchema = z.looseObject({
  model: z.string().min(1),
  text_1: z.union([z.string(), z.array(z.string()).min(1).max(2048)]),
  text_2: z.union([z.string(), z.array(z.string()).min(1).max(2048)]),
});
