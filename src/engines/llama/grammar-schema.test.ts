import { describe, expect, it } from "vitest";
import { grammarSchema } from "./grammar-schema.js";

describe("grammarSchema", () => {
  it("keeps what the grammar enforces and drops annotations", () => {
    const result = grammarSchema(
      { type: "object", title: "Weather", properties: { city: { type: "string", description: "where" }, days: { type: "integer" } }, required: ["city", "days"], additionalProperties: false },
      "response_format.json_schema.schema",
    );
    expect(result).toEqual({ schema: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city", "days"], additionalProperties: false } });
  });

  it("builds anyOf as a choice of branches", () => {
    expect(grammarSchema({ anyOf: [{ type: "string" }, { type: "null" }] }, "s")).toEqual({ schema: { oneOf: [{ type: "string" }, { type: "null" }] } });
  });

  it("refuses a keyword the grammar would skip, naming it and where it is", () => {
    const result = grammarSchema({ type: "object", properties: { code: { type: "string", pattern: "^[A-Z]+$" } } }, "response_format.json_schema.schema");
    expect(result).toEqual({ problem: expect.stringContaining('response_format.json_schema.schema.properties.code uses "pattern"') });
  });

  it("refuses a schema that allows anything", () => {
    expect(grammarSchema({}, "tools[0].function.parameters")).toEqual({ problem: expect.stringContaining("tools[0].function.parameters allows any value") });
  });

  it("refuses a list of types that mixes objects in", () => {
    expect(grammarSchema({ type: ["object", "null"] }, "s")).toEqual({ problem: expect.stringContaining("s.type") });
  });

  it("refuses a $ref outside $defs", () => {
    expect(grammarSchema({ $ref: "#/definitions/Thing" }, "s")).toEqual({ problem: expect.stringContaining("#/$defs/") });
  });
});
