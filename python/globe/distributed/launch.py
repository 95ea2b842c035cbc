"""python3 -m globe.distributed.launch [globe-launch options] script.py [args]: the same as
`python3 -m globe.launch` (OneFlow's module path, with only the package renamed)."""
import sys

from globe.launch import main

if __name__ == "__main__":
    main(sys.argv[1:])
