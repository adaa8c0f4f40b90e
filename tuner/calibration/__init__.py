"""Calibrating a device file to measured GPU times, and judging the calibrated model on
graphs held out."""
