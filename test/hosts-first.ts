// Test files that start real hosts (test/e2e/, test/reliability/) run before the unit files:
// they are the long ones, and a long file started last leaves the other workers idle at the end
// of `npm test` while it runs alone. Within each group vitest's own order stands (its cached
// durations where it has them, else larger files first). Order only: no test depends on it.
import { BaseSequencer, type TestSpecification } from 'vitest/node'

const HOSTS = ['/test/e2e/', '/test/reliability/']

function startsHosts(spec: TestSpecification): boolean {
  return HOSTS.some((folder) => spec.moduleId.includes(folder))
}

export class HostsFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    return [...sorted.filter(startsHosts), ...sorted.filter((spec) => !startsHosts(spec))]
  }
}
