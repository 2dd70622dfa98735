import { randomUUID } from "node:crypto";
import { request, WebSocket } from "undici";
import { z } from "zod";
import { DomainError } from "../../errors/light.js";
import { UpstreamError } from "../wire/upstream-error.js";
import type { ComfyWorkflowNodes } from "./fill-workflow.js";

/** One file a workflow produced, as the engine served it from /view. */
export interface ComfyOutputFile {
  readonly filename: string;
  readonly contentType: string;
  readonly bytes: Buffer;
}

export interface ComfyEngine {
  /** http://HOST:PORT of the replica. */
  readonly origin: string;
  readonly authorization: string | undefined;
  /** "replica ID", for errors and logs. */
  readonly upstream: string;
  readonly requestId: string;
}

// What ComfyUI sends back is read leniently: only what is used here is checked (server.py, execution.py).
const promptAnswerSchema = z.looseObject({ prompt_id: z.string().min(1) });
const promptRefusalSchema = z.looseObject({
  error: z.looseObject({ message: z.string().catch(""), details: z.string().catch("") }).optional(),
  node_errors: z.record(z.string(), z.looseObject({ errors: z.array(z.looseObject({ message: z.string().catch(""), details: z.string().catch("") })).catch([]), class_type: z.string().catch("") })).catch({}),
});
const socketMessageSchema = z.looseObject({ type: z.string(), data: z.looseObject({ prompt_id: z.string().optional(), node: z.string().nullable().optional() }).catch({}) });
const executionErrorSchema = z.looseObject({ node_id: z.string().catch(""), node_type: z.string().catch(""), exception_type: z.string().catch(""), exception_message: z.string().catch("") });
const outputFileSchema = z.looseObject({ filename: z.string().min(1), subfolder: z.string().catch(""), type: z.string().catch("output") });
const historySchema = z.record(
  z.string(),
  z.looseObject({
    outputs: z.record(z.string(), z.record(z.string(), z.unknown())).catch({}),
    status: z.looseObject({ status_str: z.string().catch(""), completed: z.boolean().catch(false), messages: z.array(z.unknown()).catch([]) }).optional(),
  }),
);

/** How often the history is asked when the websocket is gone: a workflow takes seconds to minutes. */
const historyPollMs = 500;

/**
 * Runs one workflow on one ComfyUI replica as its own web client does:
 * opens the websocket with a client id, submits the workflow (POST /prompt),
 * follows the progress messages for that prompt until it finishes or fails,
 * reads /history/{id} for its outputs and fetches each from /view.
 *
 * An engine that cannot be reached, or answers 5xx before taking the prompt,
 * is a retryable UpstreamError (another replica may answer); a workflow
 * ComfyUI refuses or that fails while running is engine_execution_failed with
 * ComfyUI's own message; past `deadline` it is engine_timeout.
 */
export async function runComfyWorkflow(
  engine: ComfyEngine,
  workflow: ComfyWorkflowNodes,
  options: { readonly deadlineMs: number; readonly signal?: AbortSignal; readonly wantedKinds: readonly string[] },
): Promise<ComfyOutputFile[]> {
  const deadline = AbortSignal.any([AbortSignal.timeout(options.deadlineMs), ...(options.signal ? [options.signal] : [])]);
  const clientId = randomUUID().replace(/-/g, "");
  const progress = new PromptProgress();
  const socket = openSocket(engine, clientId, progress);
  try {
    // The socket is open before the prompt is sent, so no message about it can be missed.
    await Promise.race([socket.opened, abortable(deadline)]).catch(() => undefined);
    const promptId = await submitPrompt(engine, workflow, clientId, deadline);
    await progress.finished(promptId, deadline, () => readHistory(engine, promptId, deadline), options.deadlineMs, engine);
    const history = await readHistory(engine, promptId, deadline);
    const entry = history?.[promptId];
    if (!entry) throw new DomainError("engine_execution_failed", `${engine.upstream} finished prompt ${promptId} but its history has no entry for it`, "Retry; if it persists, `llmgw ctl logs` of the replica shows what ComfyUI did.");
    const files = outputFilesOf(entry.outputs, options.wantedKinds);
    if (files.length === 0) {
      throw new DomainError("engine_execution_failed", `${engine.upstream} ran the workflow and it saved no ${options.wantedKinds.join(" or ")} output`, "The model's workflow needs a save node (SaveImage, SaveGLB); correct the model's comfy.workflow.");
    }
    const fetched: ComfyOutputFile[] = [];
    for (const file of files) fetched.push(await viewFile(engine, file, deadline));
    return fetched;
  } catch (error) {
    if (deadline.aborted && !(error instanceof DomainError) && !(error instanceof UpstreamError)) throw timeoutError(engine, options.deadlineMs);
    throw error;
  } finally {
    socket.close();
  }
}

function timeoutError(engine: ComfyEngine, deadlineMs: number): DomainError {
  return new DomainError("engine_timeout", `${engine.upstream} did not finish the workflow within ${Math.round(deadlineMs / 1000)} s`, "Retry later: the engine is busy or the workflow is slow; fewer images per request (n) finish sooner.");
}

function abortable(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

function headersOf(engine: ComfyEngine): Record<string, string> {
  return { "x-request-id": engine.requestId, ...(engine.authorization !== undefined ? { authorization: engine.authorization } : {}) };
}

/** The outcome of each prompt as the socket reported it, kept by prompt id (messages may come before POST /prompt has answered). */
class PromptProgress {
  readonly #done = new Set<string>();
  readonly #failed = new Map<string, string>();
  #wake: (() => void) | undefined;
  socketGone = false;

  onMessage(text: string): void {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return;
    }
    const message = socketMessageSchema.safeParse(json);
    if (!message.success) return;
    const { type, data } = message.data;
    const promptId = data.prompt_id;
    if (promptId === undefined) return;
    if (type === "execution_success" || (type === "executing" && data.node === null)) this.#done.add(promptId);
    else if (type === "execution_error") this.#failed.set(promptId, describeExecutionError(executionErrorSchema.parse(data)));
    else if (type === "execution_interrupted") this.#failed.set(promptId, "the prompt was interrupted on the engine");
    else return;
    this.#wake?.();
  }

  onGone(): void {
    this.socketGone = true;
    this.#wake?.();
  }

  /** Resolves when the prompt is done, throws its failure; with the socket gone, asks the history instead. */
  async finished(promptId: string, deadline: AbortSignal, history: () => Promise<z.infer<typeof historySchema> | undefined>, deadlineMs: number, engine: ComfyEngine): Promise<void> {
    for (;;) {
      const failure = this.#failed.get(promptId);
      if (failure !== undefined) throw new DomainError("engine_execution_failed", `ComfyUI on ${engine.upstream} failed while running the workflow: ${failure}`, "The engine's own words are above; check the model's workflow and files, or retry with a smaller size or n.");
      if (this.#done.has(promptId)) return;
      if (deadline.aborted) throw timeoutError(engine, deadlineMs);
      if (this.socketGone) {
        const entry = (await history())?.[promptId];
        const status = entry?.status;
        if (status?.status_str === "error") {
          const reported = status.messages.find((message) => Array.isArray(message) && message[0] === "execution_error");
          const parsed = Array.isArray(reported) ? executionErrorSchema.safeParse(reported[1]) : undefined;
          this.#failed.set(promptId, parsed?.success ? describeExecutionError(parsed.data) : "the history says the prompt failed");
          continue;
        }
        if (entry !== undefined && (status === undefined || status.completed)) return;
        await new Promise((resolve) => setTimeout(resolve, historyPollMs));
        continue;
      }
      await new Promise<void>((resolve) => {
        const onAbort = () => resolve();
        this.#wake = () => {
          deadline.removeEventListener("abort", onAbort);
          resolve();
        };
        deadline.addEventListener("abort", onAbort, { once: true });
      });
      this.#wake = undefined;
    }
  }
}

function describeExecutionError(error: z.infer<typeof executionErrorSchema>): string {
  const node = error.node_id !== "" ? ` in node ${error.node_id}${error.node_type !== "" ? ` (${error.node_type})` : ""}` : "";
  return `${error.exception_type !== "" ? `${error.exception_type}: ` : ""}${error.exception_message.trim() || "no message"}${node}`;
}

function openSocket(engine: ComfyEngine, clientId: string, progress: PromptProgress): { opened: Promise<void>; close: () => void } {
  const url = `${engine.origin.replace(/^http/, "ws")}/ws?clientId=${clientId}`;
  let socket: WebSocket;
  try {
    socket = new WebSocket(url, { headers: headersOf(engine) });
  } catch {
    progress.onGone();
    return { opened: Promise.resolve(), close: () => undefined };
  }
  const opened = new Promise<void>((resolve) => {
    socket.addEventListener("open", () => resolve());
    socket.addEventListener("close", () => resolve());
    socket.addEventListener("error", () => resolve());
  });
  socket.addEventListener("message", (event) => {
    // Binary messages are preview images; only the JSON text ones report progress.
    if (typeof event.data === "string") progress.onMessage(event.data);
  });
  socket.addEventListener("close", () => progress.onGone());
  socket.addEventListener("error", () => progress.onGone());
  return {
    opened,
    close: () => {
      try {
        socket.close();
      } catch {
        // Already closed: nothing to release.
      }
    },
  };
}

async function submitPrompt(engine: ComfyEngine, workflow: ComfyWorkflowNodes, clientId: string, deadline: AbortSignal): Promise<string> {
  let answer: Awaited<ReturnType<typeof request>>;
  try {
    answer = await request(`${engine.origin}/prompt`, {
      method: "POST",
      headers: { ...headersOf(engine), "content-type": "application/json" },
      body: JSON.stringify({ prompt: workflow, client_id: clientId }),
      signal: deadline,
    });
  } catch (error) {
    if (deadline.aborted) throw error;
    throw new UpstreamError(undefined, true, engine.upstream, `could not send the workflow: ${error instanceof Error ? error.message : String(error)}`);
  }
  const text = await answer.body.text();
  if (UpstreamError.retryableStatus(answer.statusCode)) throw new UpstreamError(answer.statusCode, true, engine.upstream, `POST /prompt answered ${answer.statusCode}: ${text.slice(0, 300)}`);
  if (answer.statusCode !== 200) {
    throw new DomainError("engine_execution_failed", `ComfyUI on ${engine.upstream} refused the workflow (${answer.statusCode}): ${describeRefusal(text)}`, "Check the model's workflow against the engine's nodes and files (a missing model file or custom node is named above).");
  }
  const parsed = promptAnswerSchema.safeParse(safeJson(text));
  if (!parsed.success) throw new UpstreamError(answer.statusCode, true, engine.upstream, "POST /prompt answered without a prompt_id: not a ComfyUI server");
  return parsed.data.prompt_id;
}

function describeRefusal(text: string): string {
  const parsed = promptRefusalSchema.safeParse(safeJson(text));
  if (!parsed.success) return text.slice(0, 300) || "no message";
  const parts = [parsed.data.error?.message ?? ""];
  for (const [nodeId, node] of Object.entries(parsed.data.node_errors)) {
    for (const problem of node.errors) parts.push(`node ${nodeId}${node.class_type !== "" ? ` (${node.class_type})` : ""}: ${problem.message}${problem.details !== "" ? ` (${problem.details})` : ""}`);
  }
  return parts.filter((part) => part !== "").join("; ") || "no message";
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function readHistory(engine: ComfyEngine, promptId: string, deadline: AbortSignal): Promise<z.infer<typeof historySchema> | undefined> {
  let answer: Awaited<ReturnType<typeof request>>;
  try {
    answer = await request(`${engine.origin}/history/${encodeURIComponent(promptId)}`, { headers: headersOf(engine), signal: deadline });
  } catch (error) {
    if (deadline.aborted) throw error;
    throw new DomainError("engine_execution_failed", `${engine.upstream} went away while running the workflow (${error instanceof Error ? error.message : String(error)})`, "Retry; `llmgw ctl replicas` shows whether the replica is still up.");
  }
  const text = await answer.body.text();
  if (answer.statusCode !== 200) return undefined;
  const parsed = historySchema.safeParse(safeJson(text));
  return parsed.success ? parsed.data : undefined;
}

/** Saved files of the wanted kinds (images, 3d), in node order; previews (type temp) are left out. */
function outputFilesOf(outputs: Record<string, Record<string, unknown>>, wantedKinds: readonly string[]): z.infer<typeof outputFileSchema>[] {
  const files: z.infer<typeof outputFileSchema>[] = [];
  const nodeIds = Object.keys(outputs).sort((left, right) => Number(left) - Number(right) || left.localeCompare(right));
  for (const nodeId of nodeIds) {
    for (const kind of wantedKinds) {
      const listed = outputs[nodeId]?.[kind];
      if (!Array.isArray(listed)) continue;
      for (const item of listed) {
        const file = outputFileSchema.safeParse(item);
        if (file.success && file.data.type === "output") files.push(file.data);
      }
    }
  }
  return files;
}

async function viewFile(engine: ComfyEngine, file: z.infer<typeof outputFileSchema>, deadline: AbortSignal): Promise<ComfyOutputFile> {
  const query = new URLSearchParams({ filename: file.filename, subfolder: file.subfolder, type: file.type });
  let answer: Awaited<ReturnType<typeof request>>;
  try {
    answer = await request(`${engine.origin}/view?${query.toString()}`, { headers: headersOf(engine), signal: deadline });
  } catch (error) {
    if (deadline.aborted) throw error;
    throw new DomainError("engine_execution_failed", `${engine.upstream} went away before its output ${file.filename} was read`, "Retry; `llmgw ctl replicas` shows whether the replica is still up.");
  }
  const bytes = Buffer.from(await answer.body.arrayBuffer());
  if (answer.statusCode !== 200) {
    throw new DomainError("engine_execution_failed", `${engine.upstream} saved ${file.filename} but GET /view answered ${answer.statusCode}`, "Retry; if it persists, the replica's log shows where ComfyUI wrote its output.");
  }
  const declared = answer.headers["content-type"];
  return { filename: file.filename, contentType: typeof declared === "string" ? declared.split(";")[0]?.trim() || contentTypeOf(file.filename) : contentTypeOf(file.filename), bytes };
}

function contentTypeOf(filename: string): string {
  if (/\.png$/i.test(filename)) return "image/png";
  if (/\.jpe?g$/i.test(filename)) return "image/jpeg";
  if (/\.webp$/i.test(filename)) return "image/webp";
  if (/\.glb$/i.test(filename)) return "model/gltf-binary";
  return "application/octet-stream";
}

/** Uploads an input image to the engine (multipart, as ComfyUI's own client does) and returns the name LoadImage knows it by. */
export async function uploadImage(engine: ComfyEngine, image: Buffer, filename: string): Promise<string> {
  const form = new FormData();
  form.set("image", new Blob([image]), filename);
  form.set("overwrite", "true");
  let answer: Response;
  try {
    answer = await fetch(`${engine.origin}/upload/image`, { method: "POST", body: form, headers: headersOf(engine) });
  } catch (error) {
    throw new UpstreamError(undefined, true, engine.upstream, `could not upload the input image: ${error instanceof Error ? error.message : String(error)}`);
  }
  const text = await answer.text();
  if (UpstreamError.retryableStatus(answer.status)) throw new UpstreamError(answer.status, true, engine.upstream, `POST /upload/image answered ${answer.status}`);
  const parsed = z.looseObject({ name: z.string().min(1), subfolder: z.string().catch("") }).safeParse(safeJson(text));
  if (answer.status !== 200 || !parsed.success) {
    throw new DomainError("engine_execution_failed", `ComfyUI on ${engine.upstream} refused the input image (${answer.status}): ${text.slice(0, 300)}`, "Send a PNG, JPEG or WebP image.");
  }
  // LoadImage names an uploaded file by its path under the input folder.
  return parsed.data.subfolder !== "" ? `${parsed.data.subfolder}/${parsed.data.name}` : parsed.data.name;
}
