import { DomainError } from "../../errors/light.js";

/** The answer to a request for a model no replica will come to, with placement's reason (503 model_unavailable). */
export function modelUnavailable(name: string, reason: string, afterFallbacks: boolean): DomainError {
  return new DomainError(
    "model_unavailable",
    `model ${name} has no replica and none will start: ${reason}${afterFallbacks ? "; no fallback could answer" : ""}`,
    `\`llmgw ctl model show ${name}\` and \`llmgw ctl events --model ${name}\` say what placement decided; give it room or change its profiles, then retry.`,
  );
}
