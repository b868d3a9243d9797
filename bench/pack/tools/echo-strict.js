// The echo tool, indexed with `sandbox: "strict"`: a fresh worker for every call.
export default function echo(input) {
  return input
}
