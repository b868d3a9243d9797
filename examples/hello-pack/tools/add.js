// A tool in the object shape a defineTool helper returns: { handler }.
export default {
  handler(input) {
    return { sum: input.a + input.b }
  },
}
