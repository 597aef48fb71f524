# A stand-in for the context module of a Pantheon checkout; emu runs
# wrappers with its own in place of it.
import sys
sys.exit("this checkout's own context module was imported")
