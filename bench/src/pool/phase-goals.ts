import type { PoolPhaseResult } from './measure-pool-fleet.js'

const MOVES_GOAL = 1.2

/**
 * Whether one phase met issue 18's goals: convergence in time, moves within 1.2x the minimum. Moves
 * are judged only for a phase that converged (`undefined` otherwise): a phase cut short moved less.
 */
export function phaseGoals(phase: PoolPhaseResult): { converged: boolean; moves: boolean | undefined } {
  return {
    converged: phase.convergedMs !== null && phase.convergedMs <= phase.goalMs,
    moves: phase.convergedMs === null ? undefined : phase.moves <= Math.ceil(phase.minimumMoves * MOVES_GOAL),
  }
}
