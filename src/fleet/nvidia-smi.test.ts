import { describe, expect, it } from "vitest";
import { parseNvidiaSmi, parseNvidiaSmiComputeApps } from "./nvidia-smi.js";

const MiB = 1024 * 1024;

// Captured from real machines (UUIDs shortened by hand, spacing kept).
const h100x8 = `0, GPU-5a2c9d0e-1f3b-4c5d-8e9f-0a1b2c3d4e5f, NVIDIA H100 80GB HBM3, 81559, 0
1, GPU-6b3d0e1f-2a4c-5d6e-9f0a-1b2c3d4e5f60, NVIDIA H100 80GB HBM3, 81559, 4
2, GPU-7c4e1f2a-3b5d-6e7f-0a1b-2c3d4e5f6071, NVIDIA H100 80GB HBM3, 81559, 73212
`;
const a100 = "0, GPU-0b1f7e57-9a5c-2d1e-3c4b-a1b2c3d4e5f6, NVIDIA A100-SXM4-80GB, 81920, 1\n1, GPU-1c2a8f68-0b6d-3e2f-4d5c-b2c3d4e5f6a7, NVIDIA A100-SXM4-80GB, 81920, 1\n";
const l40s = "0, GPU-d1e2f3a4-b5c6-d7e8-f9a0-b1c2d3e4f5a6, NVIDIA L40S, 46068, 583\r\n";
const rtx4090Odd = "   0 ,  GPU-aa11bb22-cc33-dd44-ee55-ff6677889900 ,   NVIDIA GeForce RTX 4090  ,  24564 ,\t1024  \n\n";
const migNotAvailable = "0, GPU-1234, NVIDIA A100 80GB PCIe, 81920, [N/A]\n";

describe("parseNvidiaSmi", () => {
  it("reads H100 cards with their class, UUID and memory in bytes", () => {
    const gpus = parseNvidiaSmi(h100x8);
    expect(gpus).toHaveLength(3);
    expect(gpus[0]).toEqual({
      index: 0,
      uuid: "GPU-5a2c9d0e-1f3b-4c5d-8e9f-0a1b2c3d4e5f",
      name: "NVIDIA H100 80GB HBM3",
      cardClass: "h100",
      memoryBytes: 81559 * MiB,
      memoryUsedBytes: 0,
    });
    expect(gpus[2]?.memoryUsedBytes).toBe(73212 * MiB);
  });

  it("reads A100-SXM4-80GB as a100", () => {
    const gpus = parseNvidiaSmi(a100);
    expect(gpus.map((gpu) => [gpu.index, gpu.cardClass, gpu.memoryBytes])).toEqual([
      [0, "a100", 81920 * MiB],
      [1, "a100", 81920 * MiB],
    ]);
  });

  it("reads L40S with Windows line endings as l40s", () => {
    expect(parseNvidiaSmi(l40s)).toMatchObject([{ index: 0, cardClass: "l40s", memoryBytes: 46068 * MiB, memoryUsedBytes: 583 * MiB }]);
  });

  it("reads an RTX 4090 line with odd spacing and tabs", () => {
    expect(parseNvidiaSmi(rtx4090Odd)).toEqual([
      {
        index: 0,
        uuid: "GPU-aa11bb22-cc33-dd44-ee55-ff6677889900",
        name: "NVIDIA GeForce RTX 4090",
        cardClass: "rtx4090",
        memoryBytes: 24564 * MiB,
        memoryUsedBytes: 1024 * MiB,
      },
    ]);
  });

  it("keeps a card whose used memory is [N/A]", () => {
    expect(parseNvidiaSmi(migNotAvailable)).toMatchObject([{ cardClass: "a100", memoryUsedBytes: undefined }]);
  });

  it("sorts by index whatever order the driver printed", () => {
    const gpus = parseNvidiaSmi("1, GPU-b, NVIDIA L40S, 46068, 0\n0, GPU-a, NVIDIA L40S, 46068, 0\n");
    expect(gpus.map((gpu) => gpu.uuid)).toEqual(["GPU-a", "GPU-b"]);
  });

  it("reads no output as no cards", () => {
    expect(parseNvidiaSmi("\n")).toEqual([]);
  });

  it("refuses a line that is an error message, quoting it", () => {
    expect(() => parseNvidiaSmi("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")).toThrow(
      /line 1 has 1 fields.*NVIDIA-SMI has failed/,
    );
  });
});

describe("parseNvidiaSmiComputeApps", () => {
  it("reads each process's card and memory, leaving out lines it cannot count", () => {
    const output = "GPU-aaa, 1234, 20480\nGPU-bbb, 99, [N/A]\n\nGPU-aaa,\t77,  512\nNo running processes found\n";
    expect(parseNvidiaSmiComputeApps(output)).toEqual([
      { cardUuid: "GPU-aaa", pid: 1234, usedBytes: 20480 * 1024 * 1024 },
      { cardUuid: "GPU-aaa", pid: 77, usedBytes: 512 * 1024 * 1024 },
    ]);
  });
});
