/**
 * vLLM and SGLang share their spelling of precision: a dtype for unquantized
 * weights, --quantization for a method. int8/int4 checkpoints (AWQ, GPTQ,
 * compressed-tensors) carry a quantization_config the engine reads by itself,
 * and naming a method the checkpoint does not use fails the load, so those
 * add nothing. A value llmgw does not know is passed through as a method, so
 * an operator can name one (bitsandbytes, awq_marlin) without a new release.
 */
export function torchPrecisionArguments(quantization: string | undefined): string[] {
  switch (quantization) {
    case undefined:
    case "int8":
    case "int4":
      return [];
    case "bf16":
      return ["--dtype", "bfloat16"];
    case "fp16":
      return ["--dtype", "float16"];
    default:
      return ["--quantization", quantization];
  }
}
