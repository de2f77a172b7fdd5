"""A small generic toolkit for source-to-source transformation with gast.

`parsing` turns live functions into gast trees and back into text, `templates`
renders code from Python text with placeholders, `transformer` is the base
class of every converter, `naming` invents fresh names, `anno` attaches
analysis results to nodes, `origin_info` keeps user file/line positions on
generated code, and `loader` compiles a converted tree into a function bound
to the original globals and closure cells.  Nothing here knows about tensors.
"""
