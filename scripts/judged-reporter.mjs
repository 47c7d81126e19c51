// A vitest reporter that writes one JSON line per test (package, vitest project, file, full name,
// state) to $WORKLEASE_TEST_REPORTS/<package>.jsonl, so CI's summary can say which server judged
// which test. The driver suites add it beside the default reporter when that variable is set.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'

export default class JudgedReporter {
  onInit(vitest) {
    this.root = vitest.config.root
  }

  onTestRunEnd(testModules) {
    const dir = process.env.WORKLEASE_TEST_REPORTS
    if (!dir) return
    const pkg = JSON.parse(readFileSync(join(this.root, 'package.json'), 'utf8')).name
    const lines = []
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        lines.push(
          JSON.stringify({
            package: pkg,
            project: module.project.name,
            file: relative(this.root, module.moduleId),
            name: test.fullName,
            state: test.result().state,
          }),
        )
      }
    }
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, `${pkg.replace(/[@/]/g, '_')}.jsonl`), `${lines.join('\n')}\n`)
  }
}
