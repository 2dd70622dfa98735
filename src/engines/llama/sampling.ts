import { z } from "zod";

/**
 * The sampling fields of a request, with llama-server's defaults (temperature
 * 0.8, top_p 0.95, top_k 40, min_p 0.05, a random seed). Loose: the other
 * fields of an OpenAI body are read elsewhere. Temperature 0 is greedy, so
 * the same prompt gives the same text.
 */
export const samplingSchema = z.looseObject({
  temperature: z.number().min(0).max(100).nullish().transform((value) => value ?? 0.8),
  top_p: z.number().min(0).max(1).nullish().transform((value) => value ?? 0.95),
  top_k: z.number().int().min(0).nullish().transform((value) => value ?? 40),
  min_p: z.number().min(0).max(1).nullish().transform((value) => value ?? 0.05),
  seed: z.number().int().nullish().transform((value) => (value === null || value === undefined || value < 0 ? undefined : value >>> 0)),
  frequency_penalty: z.number().min(-2).max(2).nullish().transform((value) => value ?? 0),
  presence_penalty: z.number().min(-2).max(2).nullish().transform((value) => value ?? 0),
  stop: z
    .union([z.string(), z.array(z.string()).max(16)])
    .nullish()
    .transform((value) => (value === null || value === undefined ? [] : typeof value === "string" ? [value] : value).filter((text) => text !== "")),
});
export type Sampling = z.infer<typeof samplingSchema>;
