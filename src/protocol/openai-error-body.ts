/**
 * OpenAI's error body, as every llmgw server that speaks OpenAI's API writes
 * it: the message, the error's type, `param` naming the body field at fault
 * (null when no one field is), and a code. Clients read all four; `param` is
 * never left out, or the body reads as another shape. The gateway's code is
 * OpenAI's own string ("invalid_api_key"); the engines llmgw serves itself
 * write the HTTP status there, as vLLM and llama-server do.
 */
export interface OpenAIErrorBody<Code extends string | number = string> {
  error: { message: string; type: string; param: string | null; code: Code };
}
