/** The ComfyUI routes under /v1, as answerV1Request finds them. */
export type ComfyRoute =
  | { readonly kind: "images" }
  | { readonly kind: "run"; readonly model: string }
  | { readonly kind: "kept-image"; readonly id: string };

export function comfyRouteFor(method: string | undefined, path: string): ComfyRoute | undefined {
  if (method === "POST" && path === "/v1/images/generations") return { kind: "images" };
  if (method === "POST" && path.startsWith("/v1/llmgw/comfy/")) return { kind: "run", model: decodePathSegment(path.slice("/v1/llmgw/comfy/".length)) };
  if (method === "GET" && path.startsWith(keptImagesPath)) return { kind: "kept-image", id: path.slice(keptImagesPath.length) };
  return undefined;
}

/** Where images answered as `url` are served, each at its id. */
export const keptImagesPath = "/v1/llmgw/images/";

function decodePathSegment(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
