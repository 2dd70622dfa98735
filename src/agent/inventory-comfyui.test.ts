import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { collectInventory } from "./inventory.js";

const directory = mkdtempSync(path.join(tmpdir(), "llmgw-inventory-comfyui-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

// An empty PATH: no nvidia-smi, no engines, so only the ComfyUI settings decide.
const inventoryWith = async (folder: string, installCommand: string | undefined) =>
  await collectInventory({ hostname: "h", fabric: "f", simulate: undefined, weightsDirectory: path.join(directory, "weights"), enginePaths: {}, pathEnvironment: "", comfyui: { folder, installCommand } });

describe("ComfyUI in a node's inventory", () => {
  it("is installable, and an engine placement may use, on a node with an install command and no checkout yet", async () => {
    const inventory = await inventoryWith(path.join(directory, "missing"), "git clone https://github.com/comfyanonymous/ComfyUI \"$COMFYUI_DIR\"");
    expect(inventory.comfyui).toEqual({ present: false, installable: true });
    expect(inventory.engines).toContain("comfyui");
  });

  it("is present once the checkout has a main.py, and absent from the engines with neither", async () => {
    const checkout = path.join(directory, "ComfyUI");
    mkdirSync(checkout);
    writeFileSync(path.join(checkout, "main.py"), "");
    const installed = await inventoryWith(checkout, undefined);
    expect(installed.comfyui).toEqual({ present: true, installable: false });
    expect(installed.engines).toContain("comfyui");
    const bare = await inventoryWith(path.join(directory, "nothing"), undefined);
    expect(bare.comfyui).toEqual({ present: false, installable: false });
    expect(bare.engines).not.toContain("comfyui");
  });
});
