/** `{"<field>":[`, where the first item starts; items follow one comma apart. */
export function listOpening(field: string): Buffer {
  return Buffer.from(`{${JSON.stringify(field)}:[`);
}

const comma = Buffer.from(",");
const close = Buffer.from("]");
const end = Buffer.from("}");

/**
 * `{"<field>":[<item>,<item>,…]}` (and `"next_cursor"` when paged) from each
 * item's kept JSON bytes, copied once into one buffer: the list's answer
 * without serialising or encoding an item again.
 */
export function jsonListBody(field: string, items: readonly (Buffer | readonly Buffer[])[], nextCursor?: string | null): Buffer {
  const parts: Buffer[] = [listOpening(field)];
  items.forEach((item, index) => {
    if (index > 0) parts.push(comma);
    if (Buffer.isBuffer(item)) parts.push(item);
    else parts.push(...item);
  });
  parts.push(close);
  if (nextCursor !== undefined) parts.push(Buffer.from(`,"next_cursor":${JSON.stringify(nextCursor)}`));
  parts.push(end);
  return Buffer.concat(parts);
}
