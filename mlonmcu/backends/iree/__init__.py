"""IREE backend: IREE's compiler and its bare-metal runtime as a third deployment stack."""
