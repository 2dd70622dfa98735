import { expect } from "vitest";
import { documentedViewFields, type DocumentedView } from "../../src/protocol/views.js";

/**
 * Asserts that an answer of the admin API has exactly the documented fields
 * of its shape, every one present (null when absent, never left out), and
 * the same for each nested shape docs/ctl.md documents (Model.profiles[] ...).
 */
export function expectDocumentedShape(value: unknown, shape: DocumentedView): void {
  expect(value, `${shape} is an object`).toBeTypeOf("object");
  const record = value as Record<string, unknown>;
  expect(Object.keys(record).sort(), `the fields of ${shape}`).toEqual([...documentedViewFields[shape]].sort());
  for (const nested of Object.keys(documentedViewFields) as DocumentedView[]) {
    if (nested.startsWith("ctl ")) continue;
    const [parent, field] = nested.split(".");
    if (parent !== shape || field === undefined) continue;
    const key = field.replace(/\[\]$/, "");
    const child = record[key];
    if (field.endsWith("[]")) {
      // A list may be null where the view says so (a replica on one node has no members).
      for (const element of (child ?? []) as unknown[]) expectDocumentedShape(element, nested);
    } else if (child !== null) {
      expectDocumentedShape(child, nested);
    }
  }
}
