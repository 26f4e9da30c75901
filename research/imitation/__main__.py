"""``python -m research.imitation``: behaviour cloning and DAgger
(:mod:`research.imitation.imitate`)."""

from research.imitation.imitate import main

if __name__ == "__main__":
    main()
