// Waits `ms` without using CPU: keeps a worker busy so the pool grows (memory per warm worker).
export default async function sleep(input) {
  await new Promise((resolve) => setTimeout(resolve, input.ms))
  return { slept: input.ms }
}
