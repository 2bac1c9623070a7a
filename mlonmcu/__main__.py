from mlonmcu.cli.main import main

main()
