// A CommonJS tool: the handler may be exported as `handler` (or `run`).
exports.handler = async function weather(input, ctx) {
  const city = input.city
  // Deterministic, offline "forecast" so the example needs no network.
  const temps = { paris: 14, lagos: 31, oslo: 2 }
  const celsius = temps[city.toLowerCase()] ?? 20
  if (ctx.abortSignal.aborted) throw new Error('cancelled')
  return { city, celsius, units: input.units }
}
