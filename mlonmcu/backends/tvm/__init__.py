"""TVM backend: import, lowering, schedules, AOT C emitter."""
