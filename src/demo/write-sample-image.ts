import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { simulatedPng } from "../engines/sim-process.js";

/**
 * Writes the image the demo's printed image-to-3D line uploads, and returns
 * its absolute path. Without it the line pointed at a chair.png nobody had,
 * and curl failed before it sent anything. A small real PNG (the gateway
 * checks an upload by its bytes); the simulated ComfyUI does not look at what
 * the picture shows.
 */
export async function writeSampleImage(dataDir: string): Promise<string> {
  await mkdir(dataDir, { recursive: true });
  const file = path.resolve(dataDir, "chair.png");
  await writeFile(file, simulatedPng(64, 64, 0x3a6ea5));
  return file;
}
