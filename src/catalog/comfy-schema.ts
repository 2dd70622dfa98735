import { z } from "zod";

/**
 * What a ComfyUI model is: a workflow in ComfyUI's API format (the JSON that
 * "Export (API)" saves and `POST /prompt` takes), where the gateway fills in
 * the request's values, plus the files and custom nodes it needs on the node.
 * The workflow is stored inline, so the stored model is self-contained: a
 * model that pointed at a workflow file would change when the file did.
 */

/** A ComfyUI node id as the API format writes it: a number or "12:3" for a node inside a group node. */
const nodeIdPattern = /^[A-Za-z0-9_:.-]{1,64}$/;

const workflowNodeSchema = z.strictObject({
  class_type: z.string().min(1, { message: "the node's class, such as CheckpointLoaderSimple or KSampler" }).max(200),
  inputs: z.record(z.string().max(200), z.unknown()),
  /** The title the editor shows; ComfyUI ignores it, exports include it. */
  _meta: z.looseObject({ title: z.string().optional() }).optional(),
});

/** Past this a workflow is a paste gone wrong; the largest published ones have a few hundred nodes. */
const maxWorkflowNodes = 2000;

export const comfyWorkflowSchema = z
  .record(z.string().regex(nodeIdPattern, { message: "a node id such as 3 or 12:4" }), workflowNodeSchema)
  .refine((workflow) => Object.keys(workflow).length > 0, { message: "a workflow in ComfyUI's API format (Export (API)): an object of node id → {class_type, inputs}; this one has no nodes" })
  .refine((workflow) => Object.keys(workflow).length <= maxWorkflowNodes, { message: `at most ${maxWorkflowNodes} nodes` });
export type ComfyWorkflow = z.infer<typeof comfyWorkflowSchema>;

/** Where one request value goes: NODE.inputs.FIELD, e.g. 6.inputs.text. */
const inputPathSchema = z.string().regex(/^[A-Za-z0-9_:.-]{1,64}\.inputs\.[A-Za-z0-9_ -]{1,200}$/, {
  message: 'a place in the workflow written NODE.inputs.FIELD, such as "6.inputs.text"',
});

/** The request values the gateway fills in, and where each goes. */
export const comfyInputNames = ["prompt", "negative", "width", "height", "seed", "batch", "steps", "image"] as const;
export type ComfyInputName = (typeof comfyInputNames)[number];

export const comfyOutputs = ["images", "mesh"] as const;
export type ComfyOutput = (typeof comfyOutputs)[number];

const comfyFileSchema = z.strictObject({
  source: z.string().min(1, { message: "where the file comes from: a URL, hf://org/name@revision/path/file, mirror:path, or a local path" }),
  /** The folder under ComfyUI's models/ that its loader node reads (checkpoints/, diffusion_models/, vae/, clip/, text_encoders/). */
  to: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*\/?$/, { message: "a folder under ComfyUI's models/, such as checkpoints/ or diffusion_models/ (no .., no leading /)" }),
  /** The file's name there; the source's last segment when not given. The workflow's loader names it. */
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._ +-]{0,254}$/, { message: "a file name without / (the loader node's ckpt_name, unet_name …)" }).optional(),
});
export type ComfyFile = z.infer<typeof comfyFileSchema>;

const customNodeSchema = z.strictObject({
  source: z.url({ message: "the custom node's git repository, such as https://github.com/owner/ComfyUI-Thing.git" }).refine((url) => /^https:\/\//.test(url), {
    message: "an https:// git URL (cloned into ComfyUI's custom_nodes/)",
  }),
  // A branch moves under a running fleet: two nodes would run different code.
  revision: z.string().regex(/^[A-Za-z0-9._\/-]{1,200}$/, { message: "a commit or tag to check out, so every node runs the same code" }),
});
export type ComfyCustomNode = z.infer<typeof customNodeSchema>;

export const comfySchema = z
  .strictObject({
    workflow: comfyWorkflowSchema,
    inputs: z.strictObject({
      prompt: inputPathSchema.optional(),
      negative: inputPathSchema.optional(),
      width: inputPathSchema.optional(),
      height: inputPathSchema.optional(),
      seed: inputPathSchema.optional(),
      batch: inputPathSchema.optional(),
      steps: inputPathSchema.optional(),
      image: inputPathSchema.optional(),
    }),
    outputs: z.enum(comfyOutputs, { message: "images (POST /v1/images/generations) or mesh (POST /v1/llmgw/comfy/MODEL, image to 3D)" }),
    files: z.array(comfyFileSchema).max(200).optional(),
    custom_nodes: z.array(customNodeSchema).max(200).optional(),
  })
  .superRefine((comfy, context) => {
    for (const problem of comfyProblems(comfy)) context.addIssue({ code: "custom", path: problem.path, message: problem.message });
  });
export type ComfySettings = z.infer<typeof comfySchema>;

/** NODE.inputs.FIELD split; undefined when the text is not of that form (the schema refuses it first). */
export function splitInputPath(text: string): { node: string; field: string } | undefined {
  const at = text.indexOf(".inputs.");
  if (at <= 0) return undefined;
  return { node: text.slice(0, at), field: text.slice(at + ".inputs.".length) };
}

/**
 * What the schema's field checks cannot see: input paths that point at a
 * node or field the workflow does not have (the gateway would fill in a value
 * ComfyUI never reads, and every image would come out of the default prompt),
 * links to missing nodes, and the input each output kind needs.
 */
function comfyProblems(comfy: Omit<ComfySettings, never>): { path: (string | number)[]; message: string }[] {
  const problems: { path: (string | number)[]; message: string }[] = [];
  const nodeIds = Object.keys(comfy.workflow);
  const listed = nodeIds.length <= 40 ? nodeIds.join(", ") : `${nodeIds.slice(0, 40).join(", ")} …`;
  for (const name of comfyInputNames) {
    const text = comfy.inputs[name];
    if (text === undefined) continue;
    const place = splitInputPath(text);
    if (!place) continue;
    const node = comfy.workflow[place.node];
    if (!node) {
      problems.push({ path: ["inputs", name], message: `"${text}" names node ${place.node}, which the workflow does not have (its nodes: ${listed})` });
      continue;
    }
    if (!(place.field in node.inputs)) {
      const fields = Object.keys(node.inputs);
      problems.push({
        path: ["inputs", name],
        message: `"${text}": node ${place.node} (${node.class_type}) has no input "${place.field}" (its inputs: ${fields.length > 0 ? fields.join(", ") : "none"})`,
      });
      continue;
    }
    if (Array.isArray(node.inputs[place.field])) {
      problems.push({
        path: ["inputs", name],
        message: `"${text}": input "${place.field}" of node ${place.node} (${node.class_type}) is a link from another node, not a value the gateway can fill in; point at the node that holds the value`,
      });
    }
  }
  for (const [nodeId, node] of Object.entries(comfy.workflow)) {
    for (const [field, value] of Object.entries(node.inputs)) {
      // A link is [source node id, output index]: ComfyUI refuses the whole prompt when its node is missing.
      if (Array.isArray(value) && value.length === 2 && typeof value[0] === "string" && typeof value[1] === "number" && !(value[0] in comfy.workflow)) {
        problems.push({ path: ["workflow", nodeId, "inputs", field], message: `links to node ${value[0]}, which the workflow does not have (its nodes: ${listed})` });
      }
    }
  }
  if (comfy.outputs === "images" && comfy.inputs.prompt === undefined) {
    problems.push({ path: ["inputs", "prompt"], message: "required for an images workflow: where the prompt text goes, such as \"6.inputs.text\"" });
  }
  if (comfy.outputs === "mesh" && comfy.inputs.image === undefined) {
    problems.push({ path: ["inputs", "image"], message: "required for a mesh workflow: the LoadImage node's image input, such as \"12.inputs.image\"" });
  }
  return problems;
}

/** The API tasks a ComfyUI model serves, as presets and error messages name them. */
export function comfyTask(outputs: ComfyOutput): "images" | "image-to-3d" {
  return outputs === "images" ? "images" : "image-to-3d";
}
