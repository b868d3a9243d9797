// A guardrail check: passes when the final answer is at most config.maxLength characters.
export function evaluate(config, trace) {
  const answer = typeof trace.finalAnswer === 'string' ? trace.finalAnswer : ''
  return { passed: answer.length <= config.maxLength }
}
