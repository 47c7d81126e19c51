import { describe, expect, test } from 'vitest'
import { Cancel } from '../src/abortable.js'
import { ListenerList } from '../src/listener-list.js'

describe('ListenerList', () => {
  test('calls each listener once, in the order they were added, also after removals compacted it', () => {
    const list = new ListenerList()
    const heard: number[] = []
    const removers = Array.from({ length: 200 }, (_, i) => list.add(() => heard.push(i)))
    // Every listener but each seventh goes: the list compacts along the way.
    removers.forEach((remove, i) => {
      if (i % 7 !== 0) remove()
    })
    list.callAll('stop')
    list.callAll('again')
    expect(heard).toEqual(removers.map((_, i) => i).filter((i) => i % 7 === 0))
  })

  test('a listener removed by an earlier one during callAll is not called; removing twice is a no-op', () => {
    const list = new ListenerList()
    const heard: string[] = []
    let removeSecond = () => {}
    list.add(() => {
      heard.push('first')
      removeSecond()
      removeSecond()
    })
    removeSecond = list.add(() => heard.push('second'))
    list.add(() => heard.push('third'))
    list.callAll('stop')
    expect(heard).toEqual(['first', 'third'])
  })
})

describe('Cancel', () => {
  test('each subscription is called once on abort, in order, and a detached one is not', () => {
    const cancel = new Cancel()
    const heard: string[] = []
    const detachA = cancel.subscribe((reason) => heard.push(`a:${reason}`))
    cancel.subscribe((reason) => heard.push(`b:${reason}`))
    const detachC = cancel.subscribe((reason) => heard.push(`c:${reason}`))
    cancel.subscribe((reason) => heard.push(`d:${reason}`))
    detachA()
    detachC()
    cancel.abort('x')
    cancel.abort('y')
    cancel.subscribe((reason) => heard.push(`late:${reason}`))
    expect(heard).toEqual(['b:x', 'd:x', 'late:x'])
  })
})
