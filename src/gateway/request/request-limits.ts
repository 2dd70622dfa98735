import { DomainError } from "../../errors/light.js";
import type { RoutingModel } from "../../protocol/index.js";
import type { GatewayEndpoint } from "../wire/gateway-exchange.js";

/** OpenAI's and vLLM's default for the legacy completions API. */
export const completionsDefaultMaxTokens = 16;

/** The body fields a limit refusal can be about, as OpenAI's `param` names them. */
export interface LimitFields {
  /** The field that asked for the answer's length: max_tokens, max_completion_tokens, max_output_tokens. */
  readonly maxTokens: string;
  /** The field that holds the prompt: messages, prompt, input. */
  readonly prompt: string;
}

/**
 * The refusal for a request over the model's limits, or undefined when it
 * fits. It names the field to change: the answer's length when the prompt
 * alone would fit, the prompt when it does not.
 */
export function limitProblem(model: RoutingModel, promptTokens: number, maxTokens: number | undefined, endpoint: GatewayEndpoint, fields: LimitFields): DomainError | undefined {
  if (endpoint !== "embeddings" && maxTokens !== undefined && model.max_output !== null && maxTokens > model.max_output) {
    const message = `${fields.maxTokens} ${maxTokens} is over model ${model.name}'s max_output of ${model.max_output} tokens`;
    return new DomainError("context_length_exceeded", message, `Ask for at most ${model.max_output} tokens.`, [{ where: fields.maxTokens, message }]);
  }
  if (model.context !== null && promptTokens + (maxTokens ?? 0) > model.context) {
    const message = `this request needs ${promptTokens + (maxTokens ?? 0)} tokens (${promptTokens} in the prompt, ${maxTokens ?? 0} for the answer), over model ${model.name}'s context of ${model.context}`;
    const where = promptTokens >= model.context || maxTokens === undefined ? fields.prompt : fields.maxTokens;
    return new DomainError("context_length_exceeded", message, where === fields.prompt ? "Shorten the prompt." : `Shorten the prompt or lower ${fields.maxTokens}.`, [{ where, message }]);
  }
  return undefined;
}
