"""``python -m research.search``: the CMA-ES search (:mod:`research.search.search`)."""

from research.search.search import main

if __name__ == "__main__":
    main()
