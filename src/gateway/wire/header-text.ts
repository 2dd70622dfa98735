/** A header's first value: node gives an array for a header sent more than once. */
export function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
