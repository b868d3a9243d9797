// A guardrail check: evaluate(config, trace, { abortSignal }) answers a verdict.
export function evaluate(config, trace) {
  const text = String(trace?.finalAnswer ?? '')
  const letters = text.replace(/[^A-Za-z]/g, '')
  const upper = letters.replace(/[^A-Z]/g, '').length
  const ratio = letters.length === 0 ? 0 : upper / letters.length
  const passed = ratio <= config.maxUppercaseRatio
  return passed ? { passed } : { passed, reason: `${Math.round(ratio * 100)}% of the letters are uppercase` }
}
