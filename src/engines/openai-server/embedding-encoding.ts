/** OpenAI's base64 encoding of an embedding: little-endian float32s (the openai client asks for it by default). */
export function embeddingToBase64(vector: readonly number[]): string {
  const buffer = Buffer.alloc(vector.length * 4);
  vector.forEach((value, index) => buffer.writeFloatLE(value, index * 4));
  return buffer.toString("base64");
}

/** An embedding as the request's encoding_format asks: the floats themselves, or base64. */
export function encodedEmbedding(vector: readonly number[], format: "float" | "base64" | null | undefined): readonly number[] | string {
  return format === "base64" ? embeddingToBase64(vector) : vector;
}
