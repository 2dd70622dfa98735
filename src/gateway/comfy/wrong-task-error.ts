import { comfyTask } from "../../catalog/index.js";
import { DomainError } from "../../errors/light.js";
import type { RoutingModel } from "../../protocol/index.js";

export type GatewayTask = "text" | "images" | "image-to-3d";

const routeOf: Record<GatewayTask, string> = {
  text: "POST /v1/chat/completions, /v1/completions or /v1/embeddings",
  images: "POST /v1/images/generations",
  "image-to-3d": "POST /v1/llmgw/comfy/MODEL",
};

/** What a model serves: a ComfyUI model its workflow's task, any other model text. */
export function taskOf(model: RoutingModel): GatewayTask {
  return model.comfy ? comfyTask(model.comfy.outputs) : "text";
}

/**
 * The refusal of a request to a model of another task, naming what the model
 * serves and where: an images request to a chat model would otherwise reach
 * a text engine that answers 404 for a route it does not have.
 */
export function wrongTaskError(model: RoutingModel, wanted: GatewayTask): DomainError {
  const has = taskOf(model);
  // A model that pools serves only its pooling routes, not chat: say those.
  const pooling = has === "text" ? model.pooling?.routes.map((route) => `/v1/${route}`) : undefined;
  const hasText = pooling ? `text by pooling (${pooling.join(", ")})` : has === "text" ? "text (chat, completions, embeddings)" : has;
  return new DomainError(
    "wrong_model_task",
    `model ${model.name} serves ${hasText}, not ${wanted === "text" ? "text" : wanted}`,
    `Send it to ${pooling ? `POST ${pooling.join(" or ")}` : routeOf[has]}, or ask for a model that serves ${wanted} (GET /v1/models).`,
  );
}
