import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import { parseAdapterOption } from "./adapter-commands.js";

describe("--add NAME=SOURCE[@SCALE]", () => {
  it("reads a name, a source and a scale", () => {
    expect(parseAdapterOption("legal=/models/legal.gguf@0.8")).toEqual({ name: "legal", source: "/models/legal.gguf", scale: 0.8 });
    expect(parseAdapterOption("sql=https://mirror/peft/sql/")).toEqual({ name: "sql", source: "https://mirror/peft/sql/" });
  });

  it("keeps an @ that is part of the source (a revision), taking only a number as the scale", () => {
    expect(parseAdapterOption("sql=hf://acme/sql-lora@v2")).toEqual({ name: "sql", source: "hf://acme/sql-lora@v2" });
    expect(parseAdapterOption("sql=hf://acme/sql-lora@v2@1.5")).toEqual({ name: "sql", source: "hf://acme/sql-lora@v2", scale: 1.5 });
  });

  it("refuses what is not NAME=SOURCE, and a scale of 0", () => {
    expect(() => parseAdapterOption("just-a-name")).toThrow(InvalidArgumentError);
    expect(() => parseAdapterOption("=source")).toThrow(/not NAME=SOURCE/);
    expect(() => parseAdapterOption("x=/a.gguf@0")).toThrow(/greater than 0/);
  });
});
