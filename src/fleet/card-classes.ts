/**
 * What llmgw knows about each GPU class: the name operators write in
 * gpu_class and --gpus, how to recognise it in nvidia-smi's product name, and
 * its memory bandwidth (the simulated engine's decode speed is bandwidth over
 * the weights each card reads per token, so this number sets its timing).
 *
 * Bandwidths are the vendors' published peak figures in GB/s.
 */
export interface CardClassInfo {
  readonly id: string;
  /** Tested in order against the lower-cased product name; the first hit wins. */
  readonly pattern: RegExp;
  readonly bandwidthGBps: number;
  /** Card memory in GB when the spec gives none (the common size of the class). */
  readonly defaultMemoryGB: number;
}

// Order matters: more specific names first (l40s before l40, h100 nvl before h100).
export const cardClasses: readonly CardClassInfo[] = [
  { id: "b200", pattern: /\bb200\b/, bandwidthGBps: 8000, defaultMemoryGB: 192 },
  { id: "h200", pattern: /\bh200\b/, bandwidthGBps: 4800, defaultMemoryGB: 141 },
  { id: "gh200", pattern: /\bgh200\b/, bandwidthGBps: 4000, defaultMemoryGB: 96 },
  { id: "h100", pattern: /\bh100\b/, bandwidthGBps: 3350, defaultMemoryGB: 80 },
  { id: "h20", pattern: /\bh20\b/, bandwidthGBps: 4000, defaultMemoryGB: 96 },
  { id: "a100", pattern: /\ba100\b/, bandwidthGBps: 2039, defaultMemoryGB: 80 },
  { id: "a800", pattern: /\ba800\b/, bandwidthGBps: 2039, defaultMemoryGB: 80 },
  { id: "l40s", pattern: /\bl40s\b/, bandwidthGBps: 864, defaultMemoryGB: 48 },
  { id: "l40", pattern: /\bl40\b/, bandwidthGBps: 864, defaultMemoryGB: 48 },
  { id: "l4", pattern: /\bl4\b/, bandwidthGBps: 300, defaultMemoryGB: 24 },
  { id: "a10g", pattern: /\ba10g\b/, bandwidthGBps: 600, defaultMemoryGB: 24 },
  { id: "a10", pattern: /\ba10\b/, bandwidthGBps: 600, defaultMemoryGB: 24 },
  { id: "a40", pattern: /\ba40\b/, bandwidthGBps: 696, defaultMemoryGB: 48 },
  { id: "rtx6000ada", pattern: /rtx 6000 ada/, bandwidthGBps: 960, defaultMemoryGB: 48 },
  { id: "a6000", pattern: /\ba6000\b/, bandwidthGBps: 768, defaultMemoryGB: 48 },
  { id: "rtx5090", pattern: /\b(rtx )?5090\b/, bandwidthGBps: 1792, defaultMemoryGB: 32 },
  { id: "rtx4090", pattern: /\b(rtx )?4090\b/, bandwidthGBps: 1008, defaultMemoryGB: 24 },
  { id: "rtx3090", pattern: /\b(rtx )?3090\b/, bandwidthGBps: 936, defaultMemoryGB: 24 },
  { id: "v100", pattern: /\bv100\b/, bandwidthGBps: 900, defaultMemoryGB: 32 },
  { id: "t4", pattern: /\bt4\b/, bandwidthGBps: 320, defaultMemoryGB: 16 },
];

/** Bandwidth assumed for a class llmgw does not know: a conservative mid-range card. */
export const unknownClassBandwidthGBps = 500;

/**
 * The class of a card from its product name as nvidia-smi prints it:
 * "NVIDIA H100 80GB HBM3" → h100, "NVIDIA A100-SXM4-80GB" → a100,
 * "NVIDIA GeForce RTX 4090" → rtx4090. An unknown card keeps a class made of
 * its name's letters and digits, so operators can still pin profiles to it.
 */
export function cardClassFromProductName(productName: string): string {
  const normalized = productName.toLowerCase().replace(/[-_]/g, " ");
  for (const info of cardClasses) {
    if (info.pattern.test(normalized)) return info.id;
  }
  return normalized
    .replace(/\b(nvidia|geforce|tesla|quadro)\b/g, "")
    .replace(/[^a-z0-9]/g, "");
}

export function cardClassInfo(classId: string): CardClassInfo | undefined {
  return cardClasses.find((info) => info.id === classId);
}
