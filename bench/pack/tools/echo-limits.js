// The echo tool, indexed with `limits` (memMB, cpuMs): the cost of limits against plain echo.
export default function echo(input) {
  return input
}
