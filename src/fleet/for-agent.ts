/** The fleet folder's face for `llmgw agent` (and the HTTP plumbing of its control API): only the names the agent uses, so that its start does not load the whole folder through index.ts. */
export { type HardwareSpec, oneNodeSpec, parseHardwareSpec } from "./hardware-spec.js";
export { nvidiaSmiComputeAppsArguments, nvidiaSmiQueryArguments, parseNvidiaSmi, parseNvidiaSmiComputeApps } from "./nvidia-smi.js";
