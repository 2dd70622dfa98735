import type { IncomingHttpHeaders } from "node:http";
import { z } from "zod";
import { DomainError } from "../../errors/light.js";
import { parseJsonBody } from "./parse-json-body.js";

export interface MeshRequest {
  readonly image: Buffer;
  /** The name the image is uploaded under, with the extension its bytes say. */
  readonly filename: string;
  readonly seed: number | undefined;
  /** glb: the mesh itself (model/gltf-binary); b64_json: JSON with the mesh in base64. */
  readonly responseFormat: "glb" | "b64_json";
}

const responseFormats = ["glb", "b64_json"] as const;

const jsonRequestSchema = z.strictObject({
  image: z.string({ message: "required: the input image, base64 or a data: URL (data:image/png;base64,...)" }).min(1, { message: "required: the input image, base64 or a data: URL" }),
  seed: z.number({ message: "a whole number from 0" }).int({ message: "a whole number from 0" }).min(0, { message: "a whole number from 0" }).max(Number.MAX_SAFE_INTEGER).optional(),
  response_format: z.enum(responseFormats, { message: "glb (the mesh as model/gltf-binary) or b64_json (JSON with the mesh in base64)" }).optional(),
});

/**
 * The body of POST /v1/llmgw/comfy/{model}: multipart/form-data with an
 * `image` file (what `curl -F image=@photo.png` sends), or JSON with the image
 * in base64. The image must be a PNG, JPEG or WebP by its own bytes: ComfyUI's
 * LoadImage would fail on anything else only after the upload and the queue.
 */
export async function readMeshRequest(headers: IncomingHttpHeaders, body: Buffer): Promise<MeshRequest> {
  const contentType = headers["content-type"] ?? "";
  if (/^multipart\/form-data/i.test(contentType)) return await readMultipart(contentType, body);
  const parsed = parseJsonBody(jsonRequestSchema, body, {
    notJson: "the request body is neither multipart/form-data nor JSON",
    notJsonHint: 'Send the image as a form file (curl -F image=@photo.png) or as JSON {"image": "<base64>"}.',
    fix: 'Send {"image": "<base64>", "seed"?: N, "response_format"?: "glb" | "b64_json"}.',
  });
  const text = parsed.image.replace(/^data:[^,]*;base64,/, "");
  if (!/^[A-Za-z0-9+/=\s_-]+$/.test(text)) throw new DomainError("invalid_input", "image: not base64", "Send the image's bytes in base64, or as a data: URL.");
  const image = Buffer.from(text, "base64");
  return { image, filename: uploadName(image), seed: parsed.seed, responseFormat: parsed.response_format ?? "glb" };
}

async function readMultipart(contentType: string, body: Buffer): Promise<MeshRequest> {
  let form: FormData;
  try {
    form = await new Response(body, { headers: { "content-type": contentType } }).formData();
  } catch {
    throw new DomainError("invalid_input", "the multipart body cannot be read", "Send a well-formed multipart/form-data body with an image file field (curl -F image=@photo.png).");
  }
  const file = form.get("image");
  if (!(file instanceof Blob)) throw new DomainError("invalid_input", "image: required, a file field named image", "Send the image as a form file: curl -F image=@photo.png.");
  const image = Buffer.from(await file.arrayBuffer());
  const seedText = form.get("seed");
  const seed = typeof seedText === "string" && seedText !== "" ? Number(seedText) : undefined;
  if (seed !== undefined && (!Number.isSafeInteger(seed) || seed < 0)) throw new DomainError("invalid_input", `seed: "${String(seedText)}" is not a whole number from 0`, "Leave seed out, or give a whole number.");
  const format = form.get("response_format");
  if (format !== null && (typeof format !== "string" || !(responseFormats as readonly string[]).includes(format))) {
    throw new DomainError("invalid_input", "response_format: glb (the mesh as model/gltf-binary) or b64_json (JSON with the mesh in base64)", "Leave response_format out for the GLB itself.");
  }
  return { image, filename: uploadName(image), seed, responseFormat: format === "b64_json" ? "b64_json" : "glb" };
}

/** A fresh name per request (two requests must not overwrite each other's input), with the extension the bytes say. */
function uploadName(image: Buffer): string {
  const extension = imageExtension(image);
  if (extension === undefined) {
    throw new DomainError("invalid_input", `image: ${image.length === 0 ? "empty" : "not a PNG, JPEG or WebP image (by its first bytes)"}`, "Send a PNG, JPEG or WebP image.");
  }
  return `llmgw-${crypto.randomUUID()}${extension}`;
}

function imageExtension(bytes: Buffer): string | undefined {
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return ".png";
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return ".jpg";
  if (bytes.length >= 12 && bytes.subarray(0, 4).toString("latin1") === "RIFF" && bytes.subarray(8, 12).toString("latin1") === "WEBP") return ".webp";
  return undefined;
}
