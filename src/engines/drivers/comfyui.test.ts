import { describe, expect, it } from "vitest";
import { comfyuiDriver } from "./comfyui.js";
import { testLaunchInput } from "./test-launch-input.js";

describe("ComfyUI driver", () => {
  it("runs main.py from the node's ComfyUI folder on one card", () => {
    const launch = comfyuiDriver.build(testLaunchInput({ modelName: "flux-schnell", cards: [3], enginePath: "/opt/ComfyUI/" }));
    expect(launch.argv).toEqual(["python3", "/opt/ComfyUI/main.py", "--listen", "127.0.0.1", "--port", "41001"]);
    expect(launch.env).toEqual({ CUDA_VISIBLE_DEVICES: "3", LLMGW_MODEL_NAME: "flux-schnell" });
    expect(launch.healthPath).toBe("/system_stats");
    expect(launch.metricsPath).toBe("/queue");
  });

  it("runs on the CPU when the placement gives no card", () => {
    const launch = comfyuiDriver.build(testLaunchInput({ cards: [], extraArgs: ["--preview-method", "none"] }));
    expect(launch.argv).toEqual(["python3", "/opt/ComfyUI/main.py", "--listen", "127.0.0.1", "--port", "41001", "--cpu", "--preview-method", "none"]);
    expect(launch.env["CUDA_VISIBLE_DEVICES"]).toBe("");
  });

  it("refuses two cards and a node without a ComfyUI folder", () => {
    expect(() => comfyuiDriver.build(testLaunchInput({ cards: [0, 1] }))).toThrow(/uses one card/);
    expect(() => comfyuiDriver.build(testLaunchInput({ enginePath: undefined }))).toThrow(/no ComfyUI folder/);
  });

  it("counts running and pending prompts from its JSON queue", () => {
    const metrics = comfyuiDriver.parseMetrics(JSON.stringify({ queue_running: [[1, "a"]], queue_pending: [[2, "b"], [3, "c"]] }));
    expect(metrics.requestsRunning).toBe(1);
    expect(metrics.requestsWaiting).toBe(2);
  });
});
